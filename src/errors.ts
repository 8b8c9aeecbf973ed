/**
 * Typed errors. Each carries the context an operator needs (source, resource, day, HTTP status)
 * and never a request header: API keys and webhook tokens stay in memory only.
 */
export interface ErrorContext {
  source?: string;
  resource?: string;
  day?: string;
  status?: number;
  /** Base URL plus path and query; never headers. */
  url?: string;
}

export class InsightsError extends Error {
  readonly context: ErrorContext;
  /** Process exit code the CLI uses when this error ends a command. */
  readonly exitCode: number = 1;

  constructor(message: string, context: ErrorContext = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.context = context;
  }
}

export interface ConfigProblem {
  /** Environment variable or config-file path (e.g. `INSIGHTS_CONCURRENCY`, `sources[1].api_key`). */
  variable: string;
  /** What was expected; never the value that was given, which may be a secret. */
  expected: string;
}

export class ConfigError extends InsightsError {
  override readonly exitCode = 2;
  readonly problems: ConfigProblem[];

  constructor(problems: ConfigProblem[]) {
    super(`invalid configuration: ${problems.map((p) => `${p.variable}: ${p.expected}`).join('; ')}`);
    this.problems = problems;
  }
}

/** The source API answered in a way that is not retried (or retries ran out). */
export class ApiError extends InsightsError {
  readonly retryable: boolean;

  constructor(message: string, context: ErrorContext, options: { retryable: boolean; cause?: unknown }) {
    super(message, context, { cause: options.cause });
    this.retryable = options.retryable;
  }
}

/** 401/403 from the source API: fail fast, the whole source is unusable until the key is fixed. */
export class AuthError extends ApiError {
  override readonly exitCode = 3;

  constructor(baseUrl: string, source: string, status: number) {
    super(
      `API key rejected by ${baseUrl} for source ${source} (HTTP ${status})`,
      { source, status, url: baseUrl },
      {
        retryable: false,
      },
    );
  }
}

/** Another run holds the warehouse lock. */
export class LockError extends InsightsError {
  override readonly exitCode = 4;
}

/** A user-facing failure of a command that is not a bug: printed as one line. */
export class CliError extends InsightsError {}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A run that ended other than ok: the CLI prints its one-line reason and exits non-zero. */
export class RunFailedError extends InsightsError {
  override readonly exitCode: number;

  constructor(message: string, exitCode: number) {
    super(message);
    this.exitCode = exitCode;
  }
}
