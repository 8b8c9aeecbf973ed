import { readFileSync } from 'node:fs';
import type * as z from 'zod';
import { ConfigError, type ConfigProblem } from '../errors.js';
import { addDays, type DayString, todayUtc } from '../time/days.js';
import { ENV_SETTINGS, type Env, type EnvName } from './env-settings.js';
import { readPiiExtraKeys, readPiiKey, withPiiPolicy } from './pii-settings.js';
import { type SourceConfig, withBudget } from './source-config.js';
import { readSources } from './sources.js';

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
  /** `serve`: sockets the addresses of one IPv4 /24 or IPv6 /64 may hold together. */
  webhookMaxConnectionsPerSubnet: number;
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
  /** How often pg-boss looks for expired jobs (and deletes old ones). */
  queueMaintenanceSeconds: number;
  /** Times a job whose worker died (or threw) is offered again before it counts as failed. */
  queueRetryLimit: number;
  /** `schedule`: run the nightly sync through the queue (as `sync --queue`). */
  scheduleQueue: boolean;
  /**
   * `schedule`: requests per source each night shares between the nightly sync and the scrub
   * that verifies older days (src/sync/scrub.ts); the scrub uses what the sync left. 0: no scrub.
   */
  scrubRequestsPerNight: number;
}

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
   * Whether INSIGHTS_PII_KEY is also looked up among the digests of common passwords and words
   * (pii-key.ts) besides its other checks. Default true. It hashes some 3,000 words (10-20 ms
   * of CPU), so the commands that never hash with the key (status, report, dbt-sources, migrate,
   * forget --list) skip it; those that use the key, and `check`, run it.
   */
  lookUpPiiKeyDigests?: boolean;
}

/** Used by `schedule` alone. */
export const SCHEDULE_SETTINGS = [
  'INSIGHTS_SCHEDULE',
  'INSIGHTS_TIMEZONE',
  'INSIGHTS_SCHEDULE_QUEUE',
  'INSIGHTS_SCRUB_REQUESTS_PER_NIGHT',
] as const satisfies readonly EnvName[];

/**
 * A quarter of the receiver's 1,024 sockets: far above one sender's parallelism (the webhook
 * benchmark uses 32), and three quarters stay for everyone else.
 */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;
/**
 * The addresses of one IPv4 /24 or IPv6 /64 together, as much as one address: many addresses of
 * one network (a host's, a customer's) count as one client. Filling all 1,024 sockets then takes
 * four networks, and a sender of any other network is still served.
 */
export const DEFAULT_MAX_CONNECTIONS_PER_SUBNET = 256;

/** Used by `serve` alone: where and how the webhook receiver listens. */
export const SERVE_SETTINGS = [
  'INSIGHTS_WEBHOOK_PORT',
  'INSIGHTS_WEBHOOK_HOST',
  'INSIGHTS_WEBHOOK_BODY_LIMIT',
  'INSIGHTS_WEBHOOK_MAX_QUEUED',
  'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS',
  'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_SUBNET',
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
  const read = settingReader(env, options.ignore, problems);
  const { setting } = read;

  const today = todayUtc(now());
  const piiKey = readPiiKey(env.INSIGHTS_PII_KEY, options.lookUpPiiKeyDigests ?? true, problems);
  const piiExtraKeys = readPiiExtraKeys(env.INSIGHTS_PII_EXTRA_KEYS, problems);
  const sourceRps = setting('INSIGHTS_SOURCE_RPS', 0);
  // The groups are read in this order, so the problems are listed in the order of the settings.
  const config: Config = {
    databaseUrl: databaseUrl(env.DATABASE_URL, problems),
    ...storageSettings(read),
    sources: readSources(
      env,
      readFile,
      options.requireSources ?? true,
      options.sourcesFor ?? 'api',
      problems,
    ).map((source) => withPiiPolicy(withBudget(source, sourceRps), piiKey, piiExtraKeys, problems)),
    ...fetchSettings(read, today),
    ...webhookSettings(read),
    schedule: setting('INSIGHTS_SCHEDULE', '0 3 * * *'),
    timezone: setting('INSIGHTS_TIMEZONE', 'UTC'),
    shutdownGraceMs: setting('INSIGHTS_SHUTDOWN_GRACE_MS', 25_000),
    piiKey,
    ...runtimeSettings(read, sourceRps),
  };
  if (config.maxLimit < config.limit) {
    problems.push({ variable: 'INSIGHTS_MAX_LIMIT', expected: ENV_SETTINGS.INSIGHTS_MAX_LIMIT.expected });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  Object.freeze(config.sources);
  for (const source of config.sources) Object.freeze(source);
  return Object.freeze(config);
}

type EnvOutput<N extends EnvName> = z.output<(typeof ENV_SETTINGS)[N]['schema']>;

/** How loadConfig reads one setting of the environment. */
interface SettingReader {
  /** The value of a setting the command reads; undefined when unset, empty or ignored. */
  given(name: EnvName): string | undefined;
  /** The setting as its schema parses it; the fallback when not given, or when wrong (a problem then). */
  setting<N extends EnvName, F = EnvOutput<N>>(name: N, fallback: EnvOutput<N> | F): EnvOutput<N> | F;
}

function settingReader(
  env: Env,
  ignore: readonly EnvName[] | undefined,
  problems: ConfigProblem[],
): SettingReader {
  function given(name: EnvName): string | undefined {
    const raw = env[name]?.trim();
    return raw === undefined || raw === '' || ignore?.includes(name) ? undefined : raw;
  }
  function setting<N extends EnvName, F = EnvOutput<N>>(
    name: N,
    fallback: EnvOutput<N> | F,
  ): EnvOutput<N> | F {
    const raw = given(name);
    if (raw === undefined) return fallback;
    const parsed = ENV_SETTINGS[name].schema.safeParse(raw);
    if (parsed.success) return parsed.data as EnvOutput<N>;
    problems.push({ variable: name, expected: ENV_SETTINGS[name].expected });
    return fallback;
  }
  return { given, setting };
}

/** Where the warehouse is kept. */
function storageSettings({ setting }: SettingReader) {
  return {
    schema: setting('INSIGHTS_SCHEMA', 'insights'),
    dataDir: setting('INSIGHTS_DATA_DIR', '.data/postgres'),
    embeddedPort: setting('INSIGHTS_EMBEDDED_PORT', 54329),
    embedded: setting('INSIGHTS_EMBEDDED', false),
  };
}

/** How a run asks the API and logs. */
function fetchSettings({ setting }: SettingReader, today: DayString) {
  return {
    concurrency: setting('INSIGHTS_CONCURRENCY', 4),
    lookbackDays: setting('INSIGHTS_LOOKBACK_DAYS', 3),
    startDate: setting('INSIGHTS_START_DATE', addDays(today, -30)),
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
  };
}

/** The webhook receiver. */
function webhookSettings({ given, setting }: SettingReader) {
  return {
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
    webhookMaxConnectionsPerSubnet: setting(
      'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_SUBNET',
      DEFAULT_MAX_CONNECTIONS_PER_SUBNET,
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
    // Beyond the nightly lookback (3 days): every nightly read of a delivered item's day has passed.
    webhookConfirmDays: setting('INSIGHTS_WEBHOOK_CONFIRM_DAYS', 4),
  };
}

/** Metrics, memory, the per-source limits and the queue. */
function runtimeSettings({ given, setting }: SettingReader, sourceRps: number) {
  return {
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
    // 200: a nightly sync takes about 40 of them per source; the 160 left verify some 108 day
    // windows a night, a two-year warehouse in 21 nights (docs/operating.md, "The scrub").
    scrubRequestsPerNight: setting('INSIGHTS_SCRUB_REQUESTS_PER_NIGHT', 200),
  };
}

function databaseUrl(raw: string | undefined, problems: ConfigProblem[]): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^postgres(?:ql)?:\/\//.test(raw)) {
    problems.push({ variable: 'DATABASE_URL', expected: 'a postgres:// or postgresql:// connection string' });
    return undefined;
  }
  return raw;
}
