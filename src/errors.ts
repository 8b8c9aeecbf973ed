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
  /** Not set at all (or empty): said as such, before what it should hold. */
  missing?: boolean;
}

/** `INSIGHTS_API_KEY is not set (the API key of the source)`, or `INSIGHTS_LIMIT: an integer 1-1000000`. */
export function describeConfigProblem(p: ConfigProblem): string {
  return p.missing === true ? `${p.variable} is not set (${p.expected})` : `${p.variable}: ${p.expected}`;
}

export class ConfigError extends InsightsError {
  override readonly exitCode = 2;
  readonly problems: ConfigProblem[];

  constructor(problems: ConfigProblem[]) {
    super(`invalid configuration: ${problems.map(describeConfigProblem).join('; ')}`);
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

/**
 * The source rejected the API key: a 401, or a 403 from every endpoint a run asked (a key that
 * may read nothing). Fail fast: the whole source is unusable until the key is fixed.
 */
export class AuthError extends ApiError {
  override readonly exitCode = 3;

  constructor(baseUrl: string, source: string, status: number, detail = '') {
    super(
      `API key rejected by ${baseUrl} for source ${source} (HTTP ${status}${detail})`,
      { source, status, url: baseUrl },
      {
        retryable: false,
      },
    );
  }
}

/**
 * A 403 or 404 from one endpoint after the key was accepted: this key may not read that resource
 * (or the server does not serve it). Not retried; that resource fails, the others of the source go on.
 */
export class EndpointRefusedError extends ApiError {
  /** 403 or 404. */
  readonly status: number;
  /** The endpoint's name: `recordings`, `abtesting/detail`, ... */
  readonly resource: string;

  constructor(path: string, source: string, status: number, resource: string, context: ErrorContext) {
    super(
      `GET ${path} refused with HTTP ${status} for source ${source}: ${refusal(status, resource)}`,
      context,
      {
        retryable: false,
      },
    );
    this.status = status;
    this.resource = resource;
  }
}

function refusal(status: number, resource: string): string {
  if (status === 403) return `this key may not read ${resource}; the other resources go on`;
  // A detail path names one test: its 404 says that test is gone, not that the endpoint is.
  if (resource.endsWith('/detail')) return 'the server knows no such test';
  return `the server does not serve ${resource}; the other resources go on`;
}

/** Another run holds the warehouse lock. */
export class LockError extends InsightsError {
  override readonly exitCode = 4;
}

/**
 * The database cannot be reached, or did not answer in time: connection refused, DNS, or a server
 * that accepts and never answers. Its own exit code, so a monitoring check (`status`) tells "the
 * warehouse is down" from "the warehouse says something needs attention" (1).
 */
export class DatabaseUnavailableError extends InsightsError {
  override readonly exitCode = 5;
}

/**
 * The database answered that it cannot do the work: a full disk, no memory, too many connections,
 * a limit (SQLSTATE class 53 or 54, src/db/resource-shortage.ts). The database's exit code, as
 * for one that cannot be reached: the warehouse needs its operator, not the command's input.
 */
export class DatabaseResourceError extends DatabaseUnavailableError {}

/**
 * A usage or configuration error, found before the command does its work: a bad argument or
 * option, a missing setting, a warehouse not migrated. One line, exit code 2.
 */
export class CliError extends InsightsError {
  override readonly exitCode = 2;
}

/**
 * What a command writes could not be written: its standard output (a full disk under a cron
 * job's `> file`, a closed pipe), an --out file, the metrics file. The same code in every command,
 * so a caller tells "the output is lost" from "the command found a problem" (1).
 */
export class OutputWriteError extends InsightsError {
  override readonly exitCode = 6;

  /** `target`: what was being written (`standard output`, a file name as the user gave it). */
  constructor(target: string, cause: unknown) {
    super(`cannot write ${target}: ${writeFailure(cause)}`, {}, { cause });
  }
}

/** `ENOSPC (no space left on device)`: the system's code and its text, without a stack. */
function writeFailure(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = errorMessage(error);
  return typeof code === 'string' && !message.startsWith(code) ? `${code} (${message})` : message;
}

/**
 * A write failure ends the command with its own code when the command would otherwise have ended
 * 0 (done) or 1 (done, something needs attention: said in the output that was lost). Any other end
 * (a usage error, a rejected key, the lock, the database, an interruption) keeps its code: it
 * says more, and its line is not on standard output.
 */
export function writeFailureWins(exitCode: number): boolean {
  return exitCode === 0 || exitCode === 1;
}

/** A command that started its work and could not finish it (not a bug): one line, exit code 1. */
export class CommandFailedError extends InsightsError {}

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
