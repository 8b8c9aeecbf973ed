import { readFileSync } from 'node:fs';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { daySchema } from '../schemas/timestamp.js';

/** One Website Insights account the tool reads from. */
export interface SourceConfig {
  /** Stable name; becomes `source_id` in every table. */
  name: string;
  baseUrl: string;
  /** Never logged, never stored. */
  apiKey: string;
}

export interface Config {
  /** Unset means: start the embedded PostgreSQL under `dataDir`. */
  databaseUrl: string | undefined;
  schema: string;
  dataDir: string;
  embeddedPort: number;
  sources: SourceConfig[];
  /** One bound on requests in flight, shared by every source and resource. */
  concurrency: number;
  lookbackDays: number;
  /** First day of the first sync, when no watermark exists yet. */
  startDate: string;
  /** `limit` sent with each day window. */
  limit: number;
  /** A saturated day is asked again with larger limits up to this ceiling. */
  maxLimit: number;
  requestTimeoutMs: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  retryAfterCapMs: number;
  /** A day whose share of invalid items is above this fails instead of loading. */
  maxInvalidShare: number;
  logLevel: string;
}

const RESERVED_SOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** Environment variables: name -> (config key, schema, what is expected, default). */
const ENV_SETTINGS = {
  INSIGHTS_SCHEMA: {
    schema: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/),
    expected: 'a lower-case SQL identifier such as insights',
  },
  INSIGHTS_DATA_DIR: { schema: z.string().min(1), expected: 'a directory path' },
  INSIGHTS_EMBEDDED_PORT: { schema: int(1024, 65535), expected: 'a TCP port 1024-65535' },
  INSIGHTS_CONCURRENCY: { schema: int(1, 64), expected: 'an integer 1-64' },
  INSIGHTS_LOOKBACK_DAYS: { schema: int(0, 365), expected: 'an integer 0-365' },
  INSIGHTS_START_DATE: { schema: daySchema, expected: 'a date YYYY-MM-DD' },
  INSIGHTS_LIMIT: { schema: int(1, 1_000_000), expected: 'an integer 1-1000000' },
  INSIGHTS_MAX_LIMIT: {
    schema: int(1, 10_000_000),
    expected: 'an integer 1-10000000, at least INSIGHTS_LIMIT',
  },
  INSIGHTS_REQUEST_TIMEOUT_MS: { schema: int(100, 600_000), expected: 'milliseconds 100-600000' },
  INSIGHTS_MAX_ATTEMPTS: { schema: int(1, 20), expected: 'an integer 1-20' },
  INSIGHTS_RETRY_BASE_MS: { schema: int(0, 60_000), expected: 'milliseconds 0-60000' },
  INSIGHTS_RETRY_MAX_MS: { schema: int(0, 600_000), expected: 'milliseconds 0-600000' },
  INSIGHTS_RETRY_AFTER_CAP_MS: { schema: int(0, 3_600_000), expected: 'milliseconds 0-3600000' },
  INSIGHTS_MAX_INVALID_SHARE: {
    schema: z.coerce.number().min(0).max(1),
    expected: 'a fraction 0-1 such as 0.05',
  },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    expected: 'one of fatal, error, warn, info, debug, trace, silent',
  },
} as const;

type EnvName = keyof typeof ENV_SETTINGS;

/** The optional JSON config file (INSIGHTS_CONFIG): several sources. Unknown keys are errors. */
const fileSchema = z.strictObject({
  sources: z
    .array(
      z.strictObject({
        name: z.string().regex(RESERVED_SOURCE_NAME),
        base_url: z.url({ protocol: /^https?$/ }),
        // The key itself or the name of the environment variable that holds it.
        api_key: z.string().min(1).optional(),
        api_key_env: z.string().min(1).optional(),
      }),
    )
    .min(1),
});

export type Env = Record<string, string | undefined>;

export interface LoadConfigOptions {
  env?: Env;
  /** For the default start date. */
  now?: () => Date;
  readFile?: (path: string) => string;
  /** `migrate` and `status` need no API source; the sync commands do. Default true. */
  requireSources?: boolean;
}

/**
 * Reads the environment (and INSIGHTS_CONFIG's file) into one frozen Config. Every problem is
 * collected and reported together, naming the variable and what was expected, never the value.
 */
export function loadConfig(options: LoadConfigOptions = {}): Readonly<Config> {
  const env = options.env ?? process.env;
  const now = options.now ?? (() => new Date());
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const problems: ConfigProblem[] = [];

  function setting<N extends EnvName>(name: N, fallback: z.output<(typeof ENV_SETTINGS)[N]['schema']>) {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const parsed = ENV_SETTINGS[name].schema.safeParse(raw);
    if (parsed.success) return parsed.data as z.output<(typeof ENV_SETTINGS)[N]['schema']>;
    problems.push({ variable: name, expected: ENV_SETTINGS[name].expected });
    return fallback;
  }

  const today = DateTime.fromJSDate(now(), { zone: 'utc' }).startOf('day');
  const config: Config = {
    databaseUrl: databaseUrl(env.DATABASE_URL, problems),
    schema: setting('INSIGHTS_SCHEMA', 'insights'),
    dataDir: setting('INSIGHTS_DATA_DIR', '.data'),
    embeddedPort: setting('INSIGHTS_EMBEDDED_PORT', 54329),
    sources: readSources(env, readFile, options.requireSources ?? true, problems),
    concurrency: setting('INSIGHTS_CONCURRENCY', 4),
    lookbackDays: setting('INSIGHTS_LOOKBACK_DAYS', 3),
    startDate: setting('INSIGHTS_START_DATE', today.minus({ days: 30 }).toISODate() ?? ''),
    limit: setting('INSIGHTS_LIMIT', 1000),
    maxLimit: setting('INSIGHTS_MAX_LIMIT', 10_000),
    requestTimeoutMs: setting('INSIGHTS_REQUEST_TIMEOUT_MS', 30_000),
    maxAttempts: setting('INSIGHTS_MAX_ATTEMPTS', 5),
    retryBaseMs: setting('INSIGHTS_RETRY_BASE_MS', 500),
    retryMaxMs: setting('INSIGHTS_RETRY_MAX_MS', 30_000),
    retryAfterCapMs: setting('INSIGHTS_RETRY_AFTER_CAP_MS', 60_000),
    maxInvalidShare: setting('INSIGHTS_MAX_INVALID_SHARE', 0.05),
    logLevel: setting('LOG_LEVEL', 'info'),
  };
  if (config.maxLimit < config.limit) {
    problems.push({ variable: 'INSIGHTS_MAX_LIMIT', expected: ENV_SETTINGS.INSIGHTS_MAX_LIMIT.expected });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

function databaseUrl(raw: string | undefined, problems: ConfigProblem[]): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^postgres(?:ql)?:\/\//.test(raw)) {
    problems.push({ variable: 'DATABASE_URL', expected: 'a postgres:// or postgresql:// connection string' });
    return undefined;
  }
  return raw;
}

function readSources(
  env: Env,
  readFile: (path: string) => string,
  required: boolean,
  problems: ConfigProblem[],
): SourceConfig[] {
  const file = env.INSIGHTS_CONFIG;
  if (file !== undefined && file !== '') return readSourcesFile(file, env, readFile, problems);

  const baseUrl = env.INSIGHTS_API_URL;
  const apiKey = env.INSIGHTS_API_KEY;
  if (!required && !baseUrl && !apiKey) return [];
  const name = env.INSIGHTS_SOURCE_NAME || 'default';
  if (!RESERVED_SOURCE_NAME.test(name)) {
    problems.push({ variable: 'INSIGHTS_SOURCE_NAME', expected: 'letters, digits, _ . - (at most 63)' });
  }
  if (!baseUrl) {
    problems.push({
      variable: 'INSIGHTS_API_URL',
      expected:
        'the base URL of the API, e.g. https://api.example.com (or INSIGHTS_CONFIG for several sources)',
    });
  } else if (!z.url({ protocol: /^https?$/ }).safeParse(baseUrl).success) {
    problems.push({ variable: 'INSIGHTS_API_URL', expected: 'an http(s) URL' });
  }
  if (!apiKey) problems.push({ variable: 'INSIGHTS_API_KEY', expected: 'the API key of the source' });
  if (!baseUrl || !apiKey) return [];
  return [{ name, baseUrl: baseUrl.replace(/\/+$/, ''), apiKey }];
}

function readSourcesFile(
  path: string,
  env: Env,
  readFile: (path: string) => string,
  problems: ConfigProblem[],
): SourceConfig[] {
  let json: unknown;
  try {
    json = JSON.parse(readFile(path));
  } catch {
    problems.push({
      variable: 'INSIGHTS_CONFIG',
      expected: `a readable JSON file (could not read or parse ${path})`,
    });
    return [];
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      problems.push({ variable: `INSIGHTS_CONFIG ${formatPath(issue.path)}`, expected: issue.message });
    }
    return [];
  }
  const sources: SourceConfig[] = [];
  const seen = new Set<string>();
  parsed.data.sources.forEach((source, index) => {
    const where = `INSIGHTS_CONFIG sources[${index}]`;
    if (seen.has(source.name))
      problems.push({ variable: `${where}.name`, expected: 'a name no other source uses' });
    seen.add(source.name);
    const apiKey = source.api_key ?? (source.api_key_env ? env[source.api_key_env] : undefined);
    if (!apiKey) {
      problems.push({
        variable: source.api_key_env ? source.api_key_env : `${where}.api_key`,
        expected: 'the API key of the source (api_key, or api_key_env naming a set variable)',
      });
      return;
    }
    sources.push({ name: source.name, baseUrl: source.base_url.replace(/\/+$/, ''), apiKey });
  });
  return sources;
}

function formatPath(path: PropertyKey[]): string {
  return path
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '');
}
