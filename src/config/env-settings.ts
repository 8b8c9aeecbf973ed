import * as z from 'zod';
import { MAX_SCHEMA_LENGTH, SCHEMA_NAME } from '../db/bookkeeping.js';
import { daySchema } from '../schemas/timestamp.js';
import { cronProblem, isTimezone } from '../time/cron-schedule.js';
import { TRUSTED_PROXY_EXPECTED, trustedProxyList } from './network.js';

/** The environment variables of the settings (a source's own are read by sources.ts): each one's schema and what it expects. */

/** Plain decimal integers only: no blanks, no hex, no exponents. */
const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/**
 * A request budget: 0 (none), or 0.01 to 1000 requests per second. Below one request per 100 s a
 * budget is more likely a typo than a plan; above 1000 the database round trip each request
 * costs (src/sync/request-budget.ts) is the bound, not the budget.
 */
const MIN_RPS = 0.01;
const MAX_RPS = 1000;
export const RPS_EXPECTED = `requests per second per source, 0 (no budget) or a number ${MIN_RPS}-${MAX_RPS} such as 4 or 0.5`;
export const rpsNumber = z
  .number({ error: RPS_EXPECTED })
  .refine((rps) => rps === 0 || (rps >= MIN_RPS && rps <= MAX_RPS), RPS_EXPECTED);

/** Environment variables: name -> (config key, schema, what is expected, default). */
export const ENV_SETTINGS = {
  INSIGHTS_SCHEMA: {
    schema: z.string().regex(SCHEMA_NAME),
    expected: `a lower-case SQL identifier of at most ${MAX_SCHEMA_LENGTH} characters such as insights`,
  },
  INSIGHTS_DATA_DIR: { schema: z.string().min(1), expected: 'a directory path' },
  INSIGHTS_EMBEDDED_PORT: { schema: int(1024, 65535), expected: 'a TCP port 1024-65535' },
  INSIGHTS_EMBEDDED: {
    schema: z.enum(['1', 'true', '0', 'false']).transform((value) => value === '1' || value === 'true'),
    expected: '1 or true (use the embedded PostgreSQL when DATABASE_URL is unset), 0 or false',
  },
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
    schema: z
      .string()
      .regex(/^\d*\.?\d+$/)
      .transform(Number)
      .pipe(z.number().min(0).max(1)),
    expected: 'a fraction 0-1 such as 0.05',
  },
  INSIGHTS_SCHEDULE: {
    schema: z.string().refine((value) => cronProblem(value, 'UTC') === undefined),
    expected: "a cron expression that fires, such as '0 3 * * *' (minute hour day month weekday)",
  },
  INSIGHTS_TIMEZONE: {
    schema: z.string().refine(isTimezone),
    expected: 'an IANA timezone such as UTC or Europe/Berlin',
  },
  INSIGHTS_SHUTDOWN_GRACE_MS: { schema: int(100, 3_600_000), expected: 'milliseconds 100-3600000' },
  LOG_FORMAT: {
    schema: z.enum(['json', 'pretty']),
    expected: 'json or pretty (default: pretty when stderr is a terminal, else json)',
  },
  LOG_LEVEL: {
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    expected: 'one of fatal, error, warn, info, debug, trace, silent',
  },
  INSIGHTS_WEBHOOK_PORT: { schema: int(0, 65535), expected: 'a TCP port 0-65535 (0: any free port)' },
  INSIGHTS_WEBHOOK_HOST: {
    schema: z.string().regex(/^[A-Za-z0-9.:_-]{1,253}$/),
    expected: 'an address to listen on, such as 0.0.0.0, 127.0.0.1 or ::',
  },
  INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS: { schema: int(1, 1024), expected: 'an integer 1-1024' },
  INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_SUBNET: { schema: int(1, 1024), expected: 'an integer 1-1024' },
  INSIGHTS_WEBHOOK_BODY_LIMIT: { schema: int(1024, 16 * 1024 * 1024), expected: 'bytes 1024-16777216' },
  INSIGHTS_WEBHOOK_MAX_QUEUED: { schema: int(1, 1_000_000), expected: 'an integer 1-1000000' },
  INSIGHTS_WEBHOOK_MAX_QUEUED_BYTES: { schema: int(1024, 4 * 1024 ** 3), expected: 'bytes 1024-4294967296' },
  INSIGHTS_WEBHOOK_RATE_LIMIT: {
    schema: int(1, 1_000_000),
    expected: 'deliveries per minute per source, an integer 1-1000000 (unset: no limit)',
  },
  INSIGHTS_WEBHOOK_RETENTION_DAYS: {
    schema: int(1, 36_500),
    expected: 'days to keep stored webhook bodies, an integer 1-36500 (unset: keep them)',
  },
  INSIGHTS_TRUSTED_PROXY: { schema: trustedProxyList, expected: TRUSTED_PROXY_EXPECTED },
  INSIGHTS_WEBHOOK_CONFIRM_DAYS: { schema: int(0, 365), expected: 'an integer 0-365' },
  // node_exporter's textfile collector reads only *.prom files.
  INSIGHTS_METRICS_FILE: {
    schema: z.string().regex(/^[^\0\n]*[^/\0\n]\.prom$/),
    expected: 'a file path ending in .prom, in the directory of node_exporter --collector.textfile.directory',
  },
  INSIGHTS_METRICS_PORT: { schema: int(1, 65535), expected: 'a TCP port 1-65535' },
  INSIGHTS_METRICS_HOST: {
    schema: z.string().regex(/^[A-Za-z0-9.:_-]{1,253}$/),
    expected: 'an address to listen on, such as 127.0.0.1, 0.0.0.0 or ::',
  },
  // The same rule as parseHeapSetting in bin/launch.js (test/reliability/launcher.trials.ts compares them).
  INSIGHTS_MAX_HEAP_MB: {
    schema: int(0, 65_536).refine((mb) => mb === 0 || mb >= 64),
    expected: 'megabytes 64-65536, or 0 for no limit',
  },
  INSIGHTS_SOURCE_CONCURRENCY: { schema: int(1, 64), expected: 'an integer 1-64' },
  INSIGHTS_SOURCE_RPS: {
    schema: z
      .string()
      .regex(/^\d+(?:\.\d+)?$/)
      .transform(Number)
      .pipe(rpsNumber),
    expected: RPS_EXPECTED,
  },
  INSIGHTS_WORKER_CONCURRENCY: { schema: int(1, 64), expected: 'an integer 1-64' },
  // pg-boss refuses an expiry of 24 hours or more.
  INSIGHTS_QUEUE_EXPIRE_SECONDS: { schema: int(1, 86_399), expected: 'seconds 1-86399' },
  INSIGHTS_QUEUE_MAINTENANCE_SECONDS: { schema: int(1, 3_600), expected: 'seconds 1-3600' },
  INSIGHTS_QUEUE_RETRY_LIMIT: { schema: int(0, 100), expected: 'an integer 0-100' },
  INSIGHTS_SCRUB_REQUESTS_PER_NIGHT: { schema: int(0, 1_000_000), expected: 'an integer 0-1000000' },
  INSIGHTS_SCHEDULE_QUEUE: {
    schema: z.enum(['1', 'true', '0', 'false']).transform((value) => value === '1' || value === 'true'),
    expected: '1 or true (the nightly sync runs through the queue), 0 or false',
  },
} as const;

export type EnvName = keyof typeof ENV_SETTINGS;

/** Every variable of ENV_SETTINGS (the sources' own variables are read apart, by readSources). */
export const ENV_SETTING_NAMES = Object.keys(ENV_SETTINGS) as EnvName[];

export type Env = Record<string, string | undefined>;
