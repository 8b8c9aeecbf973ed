import { readFileSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';
import { MAX_SCHEMA_LENGTH, SCHEMA_NAME } from '../db/bookkeeping.js';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { isHeaderValue } from '../schemas/header-value.js';
import { normalizeKey, PII_MODES, type PiiMode, type PiiPolicy } from '../schemas/pii.js';
import { daySchema } from '../schemas/timestamp.js';
import { cronProblem } from '../time/cron-schedule.js';
import { isStrongPiiKey, PII_KEY_EXPECTED, passesCharacterChecks } from './pii-key.js';

/** One Website Insights account the tool reads from. */
export interface SourceConfig {
  /** Stable name; becomes `source_id` in every table. */
  name: string;
  baseUrl: string;
  /** Never logged, never stored. */
  apiKey: string;
  /** Path secret of the source's webhook address; unset: the source has no webhook endpoint. Never logged. */
  webhookToken?: string;
  /** Webhook deliveries are accepted only from these addresses (IPs or CIDRs); unset: from anywhere. */
  allowedIps?: readonly string[];
  /** Personal data of visitors: hashed or dropped before anything is written. Unset: kept. */
  pii?: PiiPolicy;
  /**
   * Requests per second this source may start, counted across every process (src/sync/request-budget.ts):
   * its `requests_per_second`, else INSIGHTS_SOURCE_RPS. Unset: no budget.
   */
  requestsPerSecond?: number;
  /**
   * How its tests are meant to split their traffic (the file's expected_allocation): a default
   * and per test. The sample-ratio-mismatch check runs only for tests with a declared split.
   */
  expectedAllocation?: ExpectedAllocation;
}

/** A test's declared split: 'equal' among its current variants, or a weight per variant label. */
export type DeclaredSplit = 'equal' | Readonly<Record<string, number>>;

export interface ExpectedAllocation {
  /** Every test of the source without a split of its own. */
  default?: DeclaredSplit;
  /** By test id. */
  tests?: Readonly<Record<string, DeclaredSplit>>;
}

export interface Config {
  /** Unset: the embedded PostgreSQL under `dataDir` if `embedded`, else the command refuses. */
  databaseUrl: string | undefined;
  /**
   * Without DATABASE_URL, use the embedded PostgreSQL (INSIGHTS_EMBEDDED=1 or --embedded). Off by
   * default: a cron job whose environment was not loaded must fail, not load into ./.data.
   */
  embedded: boolean;
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
  /** The share of invalid items a sound response may hold: a day fails only above it, on evidence (judgeInvalid). */
  maxInvalidShare: number;
  logLevel: string;
  /** Unset: pretty when stderr is a terminal, JSON elsewhere. */
  logFormat: 'json' | 'pretty' | undefined;
  /** `serve`: where the webhook receiver listens. */
  webhookPort: number;
  webhookHost: string;
  /** Largest webhook body in bytes; a larger one is refused (413) before it is parsed. */
  webhookBodyLimit: number;
  /** `serve`: most deliveries and bytes of bodies waiting for the database; beyond them 503 at once. */
  webhookMaxQueued: number;
  webhookMaxQueuedBytes: number;
  /**
   * `serve`: sockets one client address may hold at once (beyond: closed as accepted), so one
   * client cannot take the whole connection cap from the others.
   */
  webhookMaxConnectionsPerAddress: number;
  /** `serve`: deliveries per minute each source may make (beyond: 429); undefined: no limit. */
  webhookRateLimit: number | undefined;
  /** `serve`: stored webhook bodies older than this many days are cleared; undefined: kept. */
  webhookRetentionDays: number | undefined;
  /** Proxies (IPs or CIDRs) whose X-Forwarded-For is believed; empty: the peer address is the client. */
  trustedProxy: readonly string[];
  /** status: a webhook-only row the API has not confirmed after this many days is reported. */
  webhookConfirmDays: number;
  /** When the `schedule` command runs the nightly sync: a cron expression read in `timezone`. */
  schedule: string;
  /** IANA timezone of `schedule`. */
  timezone: string;
  /** After SIGTERM/SIGINT, how long windows in flight may take before the process exits anyway. */
  shutdownGraceMs: number;
  /** HMAC key of `pii: hash` (and of the visitor pseudonyms under hash and drop). Never logged. */
  piiKey: string | undefined;
  /** sync, backfill, schedule: the run's metrics go to this file (node_exporter textfile collector). */
  metricsFile: string | undefined;
  /** schedule and serve: serve GET /metrics on this port; unset: no metrics server. */
  metricsPort: number | undefined;
  /** The address of that metrics server: loopback by default, never the webhook listener. */
  metricsHost: string;
  /**
   * --max-old-space-size of sync, backfill, schedule and serve, 0 for none. Applied by bin/launch.js
   * before this code runs (node takes it only at start); checked here to refuse a bad value.
   */
  maxHeapMb: number;
  /** `--queue` runs and `worker`: windows of one source in flight at once, across every worker. */
  sourceConcurrency: number;
  /** Requests per second each source may start, across every process; 0: no budget. A source's own value wins. */
  sourceRps: number;
  /** `worker`: windows this process runs at once, whatever their source. */
  workerConcurrency: number;
  /** A window job not finished this long after a worker took it is given to another worker. */
  queueExpireSeconds: number;
  /** How often pg-boss looks for expired jobs (and archives old ones). */
  queueMaintenanceSeconds: number;
  /** Times a job whose worker died (or threw) is offered again before it counts as failed. */
  queueRetryLimit: number;
  /** `schedule`: run the nightly sync through the queue (as `sync --queue`). */
  scheduleQueue: boolean;
}

const RESERVED_SOURCE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** Plain decimal integers only: no blanks, no hex, no exponents. */
const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d+$/)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** An IPv4 or IPv6 address, optionally with a prefix length: 10.0.0.0/8, 2001:db8::/32, ::1. */
export function isCidr(value: string): boolean {
  const [address = '', prefix, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * A request budget: 0 (none), or 0.01 to 1000 requests per second. Below one request per 100 s a
 * budget is more likely a typo than a plan; above 1000 the database round trip each request
 * costs (src/sync/request-budget.ts) is the bound, not the budget.
 */
const MIN_RPS = 0.01;
const MAX_RPS = 1000;
const RPS_EXPECTED = `requests per second per source, 0 (no budget) or a number ${MIN_RPS}-${MAX_RPS} such as 4 or 0.5`;
const rpsNumber = z
  .number({ error: RPS_EXPECTED })
  .refine((rps) => rps === 0 || (rps >= MIN_RPS && rps <= MAX_RPS), RPS_EXPECTED);

const cidrList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
  )
  .pipe(z.array(z.string().refine(isCidr)).min(1));
const CIDR_LIST_EXPECTED = 'a comma-separated list of IP addresses or CIDRs, e.g. 10.0.0.0/8,2001:db8::/32';

/**
 * The broadest CIDR INSIGHTS_TRUSTED_PROXY may name. A trusted proxy's X-Forwarded-For is believed,
 * so a range that holds more than the operator's own networks lets any sender claim any address and
 * pass an allow-list (`0.0.0.0/1,128.0.0.0/1` is the whole internet). /8 is the largest private
 * IPv4 network (10.0.0.0/8); /32 is the usual allocation of a whole IPv6 provider. An IPv4-mapped
 * IPv6 range (::ffff:0:0/96) is held to the IPv4 limit.
 */
const TRUSTED_PROXY_MIN_PREFIX = { ipv4: 8, ipv6: 32 } as const;

/** ::ffff:0:0/96, however an address in it is spelled. */
const IPV4_MAPPED = new BlockList();
IPV4_MAPPED.addSubnet('::ffff:0:0', 96, 'ipv6');

/** Whether an entry isCidr accepted is no broader than TRUSTED_PROXY_MIN_PREFIX. */
export function isNarrowEnoughProxy(entry: string): boolean {
  const [address = '', prefix] = entry.split('/');
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  if (isIP(address) === 4) return bits >= TRUSTED_PROXY_MIN_PREFIX.ipv4;
  if (bits >= 96 && IPV4_MAPPED.check(address, 'ipv6')) return bits - 96 >= TRUSTED_PROXY_MIN_PREFIX.ipv4;
  return bits >= TRUSTED_PROXY_MIN_PREFIX.ipv6;
}

const trustedProxyList = cidrList.pipe(z.array(z.string().refine(isNarrowEnoughProxy)));
const TRUSTED_PROXY_EXPECTED = `a comma-separated list of the reverse proxies' IP addresses or CIDRs, none broader than /${TRUSTED_PROXY_MIN_PREFIX.ipv4} (IPv4) or /${TRUSTED_PROXY_MIN_PREFIX.ipv6} (IPv6), e.g. 10.0.0.0/8,2001:db8::/32 (their X-Forwarded-For is believed)`;

/**
 * The token is the only credential of a webhook address (spec 6 shows no signing), so it must be
 * unguessable; it sits in the URL path, hence URL-safe characters only.
 */
const webhookTokenSchema = z.string().regex(/^[A-Za-z0-9._~-]{24,256}$/);
const WEBHOOK_TOKEN_EXPECTED =
  'a webhook token of 24-256 URL-safe characters (letters, digits, - _ . ~), e.g. from `openssl rand -hex 24`';

/** Environment variables: name -> (config key, schema, what is expected, default). */
const ENV_SETTINGS = {
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
    schema: z.string().refine((value) => IANAZone.isValidZone(value)),
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
  INSIGHTS_SCHEDULE_QUEUE: {
    schema: z.enum(['1', 'true', '0', 'false']).transform((value) => value === '1' || value === 'true'),
    expected: '1 or true (the nightly sync runs through the queue), 0 or false',
  },
} as const;

export type EnvName = keyof typeof ENV_SETTINGS;

/** Every variable of ENV_SETTINGS (the sources' own variables are read apart, by readSources). */
export const ENV_SETTING_NAMES = Object.keys(ENV_SETTINGS) as EnvName[];

/** A weight per variant label ('*': every variant without its own), or 'equal'. */
const declaredSplit = z.union([
  z.literal('equal'),
  z
    .record(z.string().min(1), z.number().positive().finite())
    .refine((weights) => Object.keys(weights).length > 0),
]);

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
        // The webhook token itself or the name of the environment variable that holds it.
        webhook_token: z.string().optional(),
        webhook_token_env: z.string().min(1).optional(),
        allowed_ips: z.array(z.string().refine(isCidr, CIDR_LIST_EXPECTED)).min(1).optional(),
        pii: z.enum(PII_MODES).optional(),
        requests_per_second: rpsNumber.optional(),
        expected_allocation: z
          .strictObject({
            default: declaredSplit.optional(),
            tests: z.record(z.string().min(1), declaredSplit).optional(),
          })
          .optional(),
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
  /**
   * Settings the command does not use: neither read nor checked, their defaults stand, so a bad
   * value of one breaks only the commands that use it (a bad INSIGHTS_SCHEDULE, `schedule`).
   */
  ignore?: readonly EnvName[];
  /**
   * What the command needs of each source. `api` (default): its base URL and API key. `webhooks`
   * (`serve`, which never calls the API): its name and webhook token; INSIGHTS_API_URL and
   * INSIGHTS_API_KEY (api_key, api_key_env in a file) are neither required nor checked, and a
   * source's `baseUrl`/`apiKey` are empty unless given.
   */
  sourcesFor?: 'api' | 'webhooks';
  /**
   * Whether INSIGHTS_PII_KEY gets the guessability estimate (pii-key.ts) on top of the character
   * checks. Default true. The estimate costs 0.6-1 s of CPU on a start (loading its
   * dictionaries), so the commands that never hash with the key (status, report, dbt-sources,
   * migrate, forget --list) skip it; those that use the key, and `check`, run it.
   */
  estimatePiiKey?: boolean;
}

/** Used by `schedule` alone. */
export const SCHEDULE_SETTINGS = [
  'INSIGHTS_SCHEDULE',
  'INSIGHTS_TIMEZONE',
  'INSIGHTS_SCHEDULE_QUEUE',
] as const satisfies readonly EnvName[];

/**
 * A quarter of the receiver's 1,024 sockets: far above one sender's parallelism (the webhook
 * benchmark uses 32), and three quarters stay for everyone else.
 */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

/** Used by `serve` alone: where and how the webhook receiver listens. */
export const SERVE_SETTINGS = [
  'INSIGHTS_WEBHOOK_PORT',
  'INSIGHTS_WEBHOOK_HOST',
  'INSIGHTS_WEBHOOK_BODY_LIMIT',
  'INSIGHTS_WEBHOOK_MAX_QUEUED',
  'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS',
  'INSIGHTS_WEBHOOK_MAX_QUEUED_BYTES',
  'INSIGHTS_WEBHOOK_RATE_LIMIT',
  'INSIGHTS_WEBHOOK_RETENTION_DAYS',
  'INSIGHTS_TRUSTED_PROXY',
] as const satisfies readonly EnvName[];

/**
 * Reads the environment (and INSIGHTS_CONFIG's file) into one frozen Config. Every problem is
 * collected and reported together, naming the variable and what was expected, never the value.
 */
export function loadConfig(options: LoadConfigOptions = {}): Readonly<Config> {
  const env = options.env ?? process.env;
  const now = options.now ?? (() => new Date());
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const problems: ConfigProblem[] = [];

  /** The value of a setting the command reads; undefined when unset, empty or ignored. */
  function given(name: EnvName): string | undefined {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' || options.ignore?.includes(name) ? undefined : raw;
  }

  function setting<N extends EnvName, F = z.output<(typeof ENV_SETTINGS)[N]['schema']>>(
    name: N,
    fallback: z.output<(typeof ENV_SETTINGS)[N]['schema']> | F,
  ) {
    const raw = given(name);
    if (raw === undefined) return fallback;
    const parsed = ENV_SETTINGS[name].schema.safeParse(raw);
    if (parsed.success) return parsed.data as z.output<(typeof ENV_SETTINGS)[N]['schema']>;
    problems.push({ variable: name, expected: ENV_SETTINGS[name].expected });
    return fallback;
  }

  const today = DateTime.fromJSDate(now(), { zone: 'utc' }).startOf('day');
  const piiKey = readPiiKey(env.INSIGHTS_PII_KEY, options.estimatePiiKey ?? true, problems);
  const piiExtraKeys = readPiiExtraKeys(env.INSIGHTS_PII_EXTRA_KEYS, problems);
  const sourceRps = setting('INSIGHTS_SOURCE_RPS', 0);
  const config: Config = {
    databaseUrl: databaseUrl(env.DATABASE_URL, problems),
    schema: setting('INSIGHTS_SCHEMA', 'insights'),
    dataDir: setting('INSIGHTS_DATA_DIR', '.data/postgres'),
    embeddedPort: setting('INSIGHTS_EMBEDDED_PORT', 54329),
    embedded: setting('INSIGHTS_EMBEDDED', false),
    sources: readSources(
      env,
      readFile,
      options.requireSources ?? true,
      options.sourcesFor ?? 'api',
      problems,
    ).map((source) => withPiiPolicy(withBudget(source, sourceRps), piiKey, piiExtraKeys, problems)),
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
    logFormat: setting('LOG_FORMAT', undefined),
    webhookPort: setting('INSIGHTS_WEBHOOK_PORT', 8080),
    webhookHost: setting('INSIGHTS_WEBHOOK_HOST', '0.0.0.0'),
    // 256 KiB: a spec-6 body is a few KiB; the margin is for long comments.
    webhookBodyLimit: setting('INSIGHTS_WEBHOOK_BODY_LIMIT', 256 * 1024),
    // Bounds of the delivery queue while the database is slow (src/webhooks/delivery-batcher.ts).
    webhookMaxQueued: setting('INSIGHTS_WEBHOOK_MAX_QUEUED', 2_000),
    webhookMaxConnectionsPerAddress: setting(
      'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS',
      DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    ),
    webhookMaxQueuedBytes: setting('INSIGHTS_WEBHOOK_MAX_QUEUED_BYTES', 32 * 1024 * 1024),
    // Both off unless set: no default limit or retention suits every deployment.
    webhookRateLimit: given('INSIGHTS_WEBHOOK_RATE_LIMIT')
      ? setting('INSIGHTS_WEBHOOK_RATE_LIMIT', 0)
      : undefined,
    webhookRetentionDays: given('INSIGHTS_WEBHOOK_RETENTION_DAYS')
      ? setting('INSIGHTS_WEBHOOK_RETENTION_DAYS', 0)
      : undefined,
    trustedProxy: setting('INSIGHTS_TRUSTED_PROXY', []),
    webhookConfirmDays: setting('INSIGHTS_WEBHOOK_CONFIRM_DAYS', 2),
    schedule: setting('INSIGHTS_SCHEDULE', '0 3 * * *'),
    timezone: setting('INSIGHTS_TIMEZONE', 'UTC'),
    shutdownGraceMs: setting('INSIGHTS_SHUTDOWN_GRACE_MS', 25_000),
    piiKey,
    metricsFile: setting('INSIGHTS_METRICS_FILE', '') || undefined,
    metricsPort: given('INSIGHTS_METRICS_PORT') ? setting('INSIGHTS_METRICS_PORT', 0) : undefined,
    metricsHost: setting('INSIGHTS_METRICS_HOST', '127.0.0.1'),
    maxHeapMb: setting('INSIGHTS_MAX_HEAP_MB', 96),
    // 2: what a typical API key allows in parallel; a source's own limit is the operator's to set.
    sourceConcurrency: setting('INSIGHTS_SOURCE_CONCURRENCY', 2),
    sourceRps,
    workerConcurrency: setting('INSIGHTS_WORKER_CONCURRENCY', 4),
    // 15 minutes: far above a window's worst case (5 attempts of 30 s per request, a few
    // requests), so a live worker's job never expires under it; a dead one's is taken again then.
    queueExpireSeconds: setting('INSIGHTS_QUEUE_EXPIRE_SECONDS', 900),
    queueMaintenanceSeconds: setting('INSIGHTS_QUEUE_MAINTENANCE_SECONDS', 60),
    queueRetryLimit: setting('INSIGHTS_QUEUE_RETRY_LIMIT', 3),
    scheduleQueue: setting('INSIGHTS_SCHEDULE_QUEUE', false),
  };
  if (config.maxLimit < config.limit) {
    problems.push({ variable: 'INSIGHTS_MAX_LIMIT', expected: ENV_SETTINGS.INSIGHTS_MAX_LIMIT.expected });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  Object.freeze(config.sources);
  for (const source of config.sources) Object.freeze(source);
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
  sourcesFor: 'api' | 'webhooks',
  problems: ConfigProblem[],
): SourceDraft[] {
  const file = env.INSIGHTS_CONFIG;
  if (file !== undefined && file !== '') {
    // The file replaces the single-source variables; one of these set as well would be ignored silently.
    for (const variable of ['INSIGHTS_WEBHOOK_TOKEN', 'INSIGHTS_WEBHOOK_ALLOWED_IPS', 'INSIGHTS_PII']) {
      if (env[variable])
        problems.push({
          variable,
          expected: 'unset when INSIGHTS_CONFIG is used (webhook_token_env / allowed_ips / pii in the file)',
        });
    }
    return readSourcesFile(file, env, readFile, sourcesFor, problems);
  }
  if (sourcesFor === 'webhooks') return readWebhookSource(env, problems);

  const baseUrl = env.INSIGHTS_API_URL;
  const apiKey = env.INSIGHTS_API_KEY;
  const pii = readPiiMode(env.INSIGHTS_PII, problems);
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
  } else {
    const expected = baseUrlExpected(baseUrl);
    if (expected !== undefined) problems.push({ variable: 'INSIGHTS_API_URL', expected });
  }
  if (!apiKey) problems.push({ variable: 'INSIGHTS_API_KEY', expected: 'the API key of the source' });
  else if (!isApiKeyValue(apiKey))
    problems.push({ variable: 'INSIGHTS_API_KEY', expected: API_KEY_CHARACTERS });
  const webhook = webhookSettings(
    { variable: 'INSIGHTS_WEBHOOK_TOKEN', value: env.INSIGHTS_WEBHOOK_TOKEN },
    { variable: 'INSIGHTS_WEBHOOK_ALLOWED_IPS', value: env.INSIGHTS_WEBHOOK_ALLOWED_IPS },
    problems,
  );
  if (!baseUrl || !apiKey) return [];
  return [{ name, baseUrl: baseUrl.replace(/\/+$/, ''), apiKey, ...webhook, ...pii }];
}

/**
 * The single source of `serve` (sourcesFor `webhooks`): its name, webhook token, allow-list and
 * pii; the API settings are not its business (an unset or bad INSIGHTS_API_KEY does not stop it).
 */
function readWebhookSource(env: Env, problems: ConfigProblem[]): SourceDraft[] {
  const pii = readPiiMode(env.INSIGHTS_PII, problems);
  const name = env.INSIGHTS_SOURCE_NAME || 'default';
  if (!RESERVED_SOURCE_NAME.test(name)) {
    problems.push({ variable: 'INSIGHTS_SOURCE_NAME', expected: 'letters, digits, _ . - (at most 63)' });
  }
  const webhook = webhookSettings(
    { variable: 'INSIGHTS_WEBHOOK_TOKEN', value: env.INSIGHTS_WEBHOOK_TOKEN },
    { variable: 'INSIGHTS_WEBHOOK_ALLOWED_IPS', value: env.INSIGHTS_WEBHOOK_ALLOWED_IPS },
    problems,
  );
  if (webhook.webhookToken === undefined) return [];
  return [{ name, baseUrl: '', apiKey: '', ...webhook, ...pii }];
}

/**
 * What a base URL must be, when it is not: an http(s) URL without credentials (a password in a
 * URL ends up in logs and errors; the key goes in INSIGHTS_API_KEY), without a query or fragment
 * (paths are appended to it), and without the `/v1` the client adds to every path itself (it
 * would ask /v1/v1/... and get a bare 404). Never quotes the value: it may hold a password.
 */
function baseUrlExpected(value: string): string | undefined {
  const example = 'e.g. https://api.example.com';
  if (!z.url({ protocol: /^https?$/ }).safeParse(value).success) return `an http(s) URL, ${example}`;
  const url = new URL(value);
  if (url.username !== '' || url.password !== '')
    return `a URL without credentials (user:password@ is refused; the API key goes in INSIGHTS_API_KEY or api_key_env), ${example}`;
  if (url.search !== '' || url.hash !== '') return `a URL without a query string or fragment, ${example}`;
  if (/\/v1\/*$/i.test(url.pathname))
    return `the base URL without the trailing /v1 (the tool adds /v1/<endpoint> itself), ${example}`;
  return undefined;
}

/**
 * The key is sent as the Authorization header (spec 5): an empty one, or one a header cannot
 * hold, is found here rather than after the run has started.
 */
function isApiKeyValue(value: string): boolean {
  return value.length > 0 && isHeaderValue(value);
}
const API_KEY_CHARACTERS =
  'the API key of the source, without line breaks, NUL or characters beyond Latin-1 (it is sent as a header)';

/** What readSources knows of a source's pii setting before the key is attached. */
type SourceDraft = Omit<SourceConfig, 'pii'> & { piiMode?: PiiMode };

function readPiiMode(raw: string | undefined, problems: ConfigProblem[]): { piiMode?: PiiMode } {
  const value = raw?.trim();
  if (value === undefined || value === '') return {};
  const parsed = z.enum(PII_MODES).safeParse(value);
  if (parsed.success) return { piiMode: parsed.data };
  problems.push({ variable: 'INSIGHTS_PII', expected: `one of ${PII_MODES.join(', ')}` });
  return {};
}

/** Taken as given (not trimmed: it is a key); empty counts as unset. */
function readPiiKey(
  raw: string | undefined,
  estimate: boolean,
  problems: ConfigProblem[],
): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (estimate ? isStrongPiiKey(raw) : passesCharacterChecks(raw)) return raw;
  problems.push({ variable: 'INSIGHTS_PII_KEY', expected: PII_KEY_EXPECTED });
  return undefined;
}

/**
 * INSIGHTS_PII_EXTRA_KEYS: more keys whose values are personal data, comma-separated, added to
 * PERSONAL_KEYS for every source that hashes or drops (matched the same way, after normalizeKey).
 */
function readPiiExtraKeys(
  raw: string | undefined,
  problems: ConfigProblem[],
): ReadonlySet<string> | undefined {
  const value = raw?.trim();
  if (value === undefined || value === '') return undefined;
  const keys = value.split(',').map((key) => normalizeKey(key.trim()));
  if (keys.every((key) => key !== '' && key.length <= 128)) return Object.freeze(new Set(keys));
  problems.push({
    variable: 'INSIGHTS_PII_EXTRA_KEYS',
    expected: 'a comma-separated list of JSON keys whose values are personal data, e.g. birthday,postal_code',
  });
  return undefined;
}

/** A source's own requests_per_second wins over INSIGHTS_SOURCE_RPS, 0 included (no budget for it). */
function withBudget(draft: SourceDraft, globalRps: number): SourceDraft {
  const { requestsPerSecond, ...source } = draft;
  const rps = requestsPerSecond ?? globalRps;
  return rps > 0 ? { ...source, requestsPerSecond: rps } : source;
}

/** keep (or unset) adds nothing, so a default configuration stays as it was; hash and drop need the key. */
function withPiiPolicy(
  draft: SourceDraft,
  key: string | undefined,
  extraKeys: ReadonlySet<string> | undefined,
  problems: ConfigProblem[],
): SourceConfig {
  const { piiMode, ...source } = draft;
  if (piiMode === undefined || piiMode === 'keep') return source;
  if (key === undefined) {
    if (!problems.some((p) => p.variable === 'INSIGHTS_PII_KEY'))
      problems.push({ variable: 'INSIGHTS_PII_KEY', expected: PII_KEY_EXPECTED });
    return source;
  }
  return {
    ...source,
    pii: Object.freeze(extraKeys === undefined ? { mode: piiMode, key } : { mode: piiMode, key, extraKeys }),
  };
}

/** The optional webhook token and allow-list of one source; an empty value counts as unset. */
function webhookSettings(
  token: { variable: string; value: string | undefined },
  allowedIps: { variable: string; value: string | readonly string[] | undefined },
  problems: ConfigProblem[],
): Pick<SourceConfig, 'webhookToken' | 'allowedIps'> {
  const settings: Pick<SourceConfig, 'webhookToken' | 'allowedIps'> = {};
  if (token.value !== undefined && token.value !== '') {
    if (webhookTokenSchema.safeParse(token.value).success) settings.webhookToken = token.value;
    else problems.push({ variable: token.variable, expected: WEBHOOK_TOKEN_EXPECTED });
  }
  if (typeof allowedIps.value === 'string' && allowedIps.value !== '') {
    const parsed = cidrList.safeParse(allowedIps.value);
    if (parsed.success) settings.allowedIps = parsed.data;
    else problems.push({ variable: allowedIps.variable, expected: CIDR_LIST_EXPECTED });
  } else if (Array.isArray(allowedIps.value)) {
    settings.allowedIps = [...allowedIps.value];
  }
  return settings;
}

function readSourcesFile(
  path: string,
  env: Env,
  readFile: (path: string) => string,
  sourcesFor: 'api' | 'webhooks',
  problems: ConfigProblem[],
): SourceDraft[] {
  let text: string;
  try {
    text = readFile(path);
  } catch {
    problems.push({ variable: 'INSIGHTS_CONFIG', expected: `a readable JSON file (could not read ${path})` });
    return [];
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    problems.push({
      variable: 'INSIGHTS_CONFIG',
      expected: `a JSON file (${path} is not valid JSON${jsonErrorPlace(text)})`,
    });
    return [];
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = formatPath(issue.path);
      problems.push({
        variable: path === '' ? 'INSIGHTS_CONFIG' : `INSIGHTS_CONFIG ${path}`,
        expected: issue.message,
      });
    }
    return [];
  }
  const sources: SourceDraft[] = [];
  const seen = new Set<string>();
  parsed.data.sources.forEach((source, index) => {
    const where = `INSIGHTS_CONFIG sources[${index}]`;
    if (seen.has(source.name))
      problems.push({ variable: `${where}.name`, expected: 'a name no other source uses' });
    seen.add(source.name);
    const urlExpected = baseUrlExpected(source.base_url);
    if (urlExpected !== undefined) {
      problems.push({ variable: `${where}.base_url`, expected: urlExpected });
      return;
    }
    const apiKey = source.api_key ?? (source.api_key_env ? env[source.api_key_env] : undefined);
    if (sourcesFor === 'webhooks') {
      // serve reads no API: the key is neither needed nor checked.
    } else if (!apiKey) {
      problems.push({
        variable: source.api_key_env ? source.api_key_env : `${where}.api_key`,
        expected: 'the API key of the source (api_key, or api_key_env naming a set variable)',
      });
      return;
    } else if (!isApiKeyValue(apiKey)) {
      problems.push({
        variable: source.api_key_env ? source.api_key_env : `${where}.api_key`,
        expected: API_KEY_CHARACTERS,
      });
      return;
    }
    if (source.webhook_token === undefined && source.webhook_token_env && !env[source.webhook_token_env]) {
      problems.push({ variable: source.webhook_token_env, expected: WEBHOOK_TOKEN_EXPECTED });
    }
    const webhook = webhookSettings(
      source.webhook_token !== undefined
        ? { variable: `${where}.webhook_token`, value: source.webhook_token }
        : {
            variable: source.webhook_token_env ?? `${where}.webhook_token`,
            value: source.webhook_token_env ? env[source.webhook_token_env] : undefined,
          },
      { variable: `${where}.allowed_ips`, value: source.allowed_ips },
      problems,
    );
    sources.push({
      name: source.name,
      baseUrl: source.base_url.replace(/\/+$/, ''),
      apiKey: apiKey ?? '',
      ...webhook,
      piiMode: source.pii,
      ...(source.requests_per_second === undefined ? {} : { requestsPerSecond: source.requests_per_second }),
      ...(source.expected_allocation === undefined ? {} : { expectedAllocation: source.expected_allocation }),
    });
  });
  return sources;
}

/**
 * Where a JSON text breaks, as ` at line L, column C`: V8's message does not always give the
 * position, and may quote the file (secrets included), so the text is scanned here instead.
 */
export function jsonErrorPlace(text: string): string {
  const offset = firstJsonError(text);
  if (offset === undefined) return '';
  const before = text.slice(0, offset);
  return ` at line ${before.split('\n').length}, column ${offset - before.lastIndexOf('\n')}`;
}

/** The offset of the first character a JSON parser refuses; undefined if the text is valid. */
function firstJsonError(text: string): number | undefined {
  let i = 0;
  const blank = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i] ?? '')) i++;
  };
  const fail = (): never => {
    throw i;
  };
  const value = (): void => {
    blank();
    const c = text[i];
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i++;
      blank();
      if (text[i] === close) {
        i++;
        return;
      }
      for (;;) {
        if (c === '{') {
          blank();
          if (text[i] !== '"') fail();
          value();
          blank();
          if (text[i] !== ':') fail();
          i++;
        }
        value();
        blank();
        if (text[i] === ',') i++;
        else if (text[i] === close) {
          i++;
          return;
        } else fail();
      }
    }
    const token =
      // biome-ignore lint/suspicious/noControlCharactersInRegex: JSON refuses raw control characters in strings.
      /^(?:"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(
        text.slice(i),
      );
    if (token === null) fail();
    i += token?.[0].length ?? 0;
  };
  try {
    value();
    blank();
    return i < text.length ? i : undefined;
  } catch (offset) {
    return offset as number;
  }
}

function formatPath(path: PropertyKey[]): string {
  return path
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '');
}
