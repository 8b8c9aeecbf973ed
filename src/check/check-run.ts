import { accessSync, constants as fsConstants, type Stats, statSync } from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { createApiClient } from '../api/api-client.js';
import { type Config, loadConfig, SCHEDULE_SETTINGS, SERVE_SETTINGS } from '../config/config.js';
import { loadDotEnv } from '../config/dotenv.js';
import { describeUnknown, unknownVariables } from '../config/unknown-variables.js';
import {
  CONNECT_TIMEOUT_MS,
  createDb,
  createPool,
  isDatabaseTimeout,
  maskPassword,
  READ_STATEMENT_TIMEOUT_MS,
} from '../db/connection.js';
import type { Database } from '../db/database.js';
import { describeHolderOnly } from '../db/lock-holder.js';
import { migrationState, newerWarehouse, notMigrated } from '../db/migrator.js';
import { runLockHolder } from '../db/run-lock.js';
import {
  ApiError,
  AuthError,
  ConfigError,
  EndpointRefusedError,
  errorMessage,
  InsightsError,
} from '../errors.js';
import { createLogger, type Logger, loggerOptions } from '../log/logger.js';
import { SNAPSHOT_RESOURCES, type SnapshotResource, WINDOWED_RESOURCES } from '../schemas/resource-names.js';
import { TEST_KINDS, type TestKind } from '../schemas/test.js';
import { addDays, todayUtc } from '../time/days.js';

/** One row of `insights-sync check`. */
export interface CheckRow {
  check: 'configuration' | 'database' | 'migrations' | 'run lock' | 'api key' | 'endpoint' | 'output';
  /** What was checked: the masked database URL, the schema, `source` or `source/endpoint`. */
  subject: string;
  /** warning: not a failure, unless `--strict` (an unknown INSIGHTS_* variable). */
  status: 'ok' | 'failed' | 'skipped' | 'warning';
  detail: string;
  /** The exit code this row asks for when it failed (README "Exit codes"); 0 when it did not. */
  code: 0 | 1 | 2 | 3 | 5 | 6;
}

export interface CheckReport {
  ok: boolean;
  exitCode: number;
  checks: CheckRow[];
}

/**
 * The most specific code of the failed rows: a rejected key (3) says the most, then a database
 * that cannot be reached (5), then configuration (2), then a file a run would fail to write (6),
 * then an endpoint failing (1).
 */
const PRECEDENCE = [3, 5, 2, 6, 1] as const;

function exitCodeOf(rows: readonly CheckRow[]): number {
  const codes = new Set(rows.filter((row) => row.status === 'failed').map((row) => row.code));
  return PRECEDENCE.find((code) => codes.has(code)) ?? 0;
}

/**
 * Every check, each on its own: a database that cannot be reached leaves the API checks to run,
 * and an API that fails leaves the database checks to run. Never migrates, never writes.
 */
export async function runChecks(options: { strict?: boolean; source?: string } = {}): Promise<CheckReport> {
  const rows: CheckRow[] = [];
  const loaded = loadForCheck();
  const { problem, databaseInvalid, dotEnvWarning } = loaded;
  const chosen = chooseSource(loaded.config?.sources ?? [], options.source);
  const config = loaded.config === undefined ? undefined : { ...loaded.config, sources: chosen.sources };
  rows.push(
    problem === undefined
      ? {
          check: 'configuration',
          subject: 'environment',
          status: 'ok',
          detail: describeSources(loaded.config?.sources.map((s) => s.name) ?? []),
          code: 0,
        }
      : { check: 'configuration', subject: 'environment', status: 'failed', detail: problem, code: 2 },
    ...unknownVariableRows(options.strict === true),
    ...(chosen.problem === undefined
      ? []
      : [
          {
            check: 'configuration',
            subject: '--source',
            status: 'failed',
            detail: chosen.problem,
            code: 2,
          } as const,
        ]),
  );
  if (config === undefined) {
    // Nothing usable was read: the other rows say why they were not checked.
    for (const check of ['database', 'migrations', 'run lock', 'api key'] as const)
      rows.push(skipped(check, '-', 'the configuration is invalid'));
    return report(rows);
  }
  const logger = createLogger(loggerOptions(config));
  if (dotEnvWarning !== undefined) logger.warn(dotEnvWarning);
  const [database, api] = await Promise.all([
    databaseInvalid
      ? Promise.resolve(
          (['database', 'migrations', 'run lock'] as const).map((check) =>
            skipped(check, '-', 'DATABASE_URL is invalid (see configuration)'),
          ),
        )
      : checkDatabase(config),
    Promise.all(config.sources.map((source) => checkSource(config, source, logger))),
  ]);
  rows.push(...database, ...api.flat(), ...outputRows(config));
  if (config.sources.length === 0 && chosen.problem === undefined)
    rows.push({
      check: 'api key',
      subject: '-',
      status: 'failed',
      detail:
        'no source configured: set INSIGHTS_API_URL and INSIGHTS_API_KEY (or INSIGHTS_CONFIG for several sources)',
      code: 2,
    });
  return report(rows);
}

/** The configured sources, by name: all of them, or the one `--source` names. */
export function chooseSource<S extends { name: string }>(
  sources: readonly S[],
  name: string | undefined,
): { sources: S[]; problem?: string } {
  if (name === undefined) return { sources: [...sources] };
  const found = sources.filter((source) => source.name === name);
  if (found.length > 0) return { sources: found };
  return {
    sources: [],
    problem: `no source named ${name} is configured (${describeSources(sources.map((s) => s.name))})`,
  };
}

/** `3 source(s): a, b, c`; beyond 10 names the first 10 and how many more (an agency has 50). */
export function describeSources(names: readonly string[]): string {
  const shown = names.slice(0, 10).join(', ');
  const more = names.length > 10 ? ` and ${names.length - 10} more` : '';
  return `${names.length} source(s): ${shown}${more}`;
}

/**
 * `--failures`: the rows that did not pass (failed, warning, skipped), and how many passed, for a
 * set-up of many sources where the table of every endpoint runs to hundreds of lines.
 */
export function onlyProblems(report: CheckReport): CheckReport & { passedHidden: number } {
  const checks = report.checks.filter((row) => row.status !== 'ok');
  return { ...report, checks, passedHidden: report.checks.length - checks.length };
}

/**
 * Every file a run writes, by its setting: today INSIGHTS_METRICS_FILE (written after each run).
 * No row when none is set. Checked without writing: the directory exists and this user may
 * create files in it (a run writes a temporary file there and renames it over the target).
 */
function outputRows(config: Readonly<Config>): CheckRow[] {
  if (config.metricsFile === undefined) return [];
  const problem = outputFileProblem(config.metricsFile, probeFile);
  return [
    {
      check: 'output',
      subject: 'INSIGHTS_METRICS_FILE',
      status: problem === undefined ? 'ok' : 'failed',
      detail: problem === undefined ? `${config.metricsFile} can be written` : problem,
      code: problem === undefined ? 0 : 6,
    },
  ];
}

/** What a path is, as outputFileProblem needs it: `absent`, or its kind and whether it may be written. */
export type FileProbe = (
  path: string,
) => { kind: 'absent' } | { kind: 'directory' | 'file'; writable: boolean };

/** Why a run could not write `file` (its directory first), or undefined when it could. */
export function outputFileProblem(file: string, probe: FileProbe): string | undefined {
  const directory = path.dirname(path.resolve(file));
  const parent = probe(directory);
  if (parent.kind === 'absent') return `${file}: its directory ${directory} does not exist`;
  if (parent.kind !== 'directory') return `${file}: ${directory} is not a directory`;
  if (!parent.writable) return `${file}: this user may not create files in ${directory}`;
  if (probe(path.resolve(file)).kind === 'directory') return `${file} is a directory`;
  return undefined;
}

function probeFile(target: string): ReturnType<FileProbe> {
  let stat: Stats;
  try {
    stat = statSync(target);
  } catch {
    return { kind: 'absent' };
  }
  let writable = true;
  try {
    accessSync(target, fsConstants.W_OK | (stat.isDirectory() ? fsConstants.X_OK : 0));
  } catch {
    writable = false;
  }
  return { kind: stat.isDirectory() ? 'directory' : 'file', writable };
}

/** One row per INSIGHTS_* variable nothing reads: a warning, or with --strict a failure (exit 2). */
function unknownVariableRows(strict: boolean): CheckRow[] {
  return unknownVariables(process.env).map((unknown) => ({
    check: 'configuration',
    subject: unknown.name,
    status: strict ? 'failed' : 'warning',
    detail: describeUnknown(unknown),
    code: strict ? 2 : 0,
  }));
}

function report(checks: CheckRow[]): CheckReport {
  const exitCode = exitCodeOf(checks);
  return { ok: exitCode === 0, exitCode, checks };
}

/**
 * The whole configuration, every command's settings (check is where a bad one is found before a
 * nightly run trips on it). When it is invalid, what the checks themselves need is read again
 * without the settings only other commands use and without requiring a source, so that the
 * database and the API are checked still whenever their own settings are sound.
 */
function loadForCheck(): {
  config: Readonly<Config> | undefined;
  problem: string | undefined;
  /** DATABASE_URL itself is invalid: the API is checked still, the database is not. */
  databaseInvalid: boolean;
  /** .env is open to others (logged once there is a logger). */
  dotEnvWarning?: string | undefined;
} {
  let problem: string;
  let dotEnvWarning: string | undefined;
  try {
    dotEnvWarning = loadDotEnv();
    return {
      config: loadConfig({ requireSources: false }),
      problem: undefined,
      databaseInvalid: false,
      dotEnvWarning,
    };
  } catch (error) {
    if (!(error instanceof InsightsError)) throw error;
    problem = error.message;
  }
  const ignore = [...SCHEDULE_SETTINGS, ...SERVE_SETTINGS];
  try {
    return {
      config: loadConfig({ requireSources: false, ignore }),
      problem,
      databaseInvalid: false,
      dotEnvWarning,
    };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (!error.problems.some((p) => p.variable === 'DATABASE_URL'))
      return { config: undefined, problem, databaseInvalid: false };
  }
  try {
    const env = { ...process.env, DATABASE_URL: undefined };
    return {
      config: loadConfig({ env, requireSources: false, ignore }),
      problem,
      databaseInvalid: true,
      dotEnvWarning,
    };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { config: undefined, problem, databaseInvalid: true };
  }
}

async function checkDatabase(config: Readonly<Config>): Promise<CheckRow[]> {
  const schema = `schema ${config.schema}`;
  if (config.databaseUrl === undefined)
    return [
      {
        check: 'database',
        subject: '-',
        status: 'failed',
        detail:
          'DATABASE_URL is not set: set it to the warehouse (postgres://..., in the environment or in .env); check reads a server database only',
        code: 2,
      },
      skipped('migrations', schema, 'no database'),
      skipped('run lock', schema, 'no database'),
    ];
  const shown = maskPassword(config.databaseUrl);
  const pool = createPool({
    url: config.databaseUrl,
    schema: config.schema,
    statementTimeoutMs: READ_STATEMENT_TIMEOUT_MS,
  });
  const db = createDb(pool);
  try {
    let version: string;
    try {
      await pool.query(PROBE);
      version =
        (await pool.query<{ server_version: string }>('show server_version')).rows[0]?.server_version ?? '?';
    } catch (error) {
      return [
        {
          check: 'database',
          subject: shown,
          status: 'failed',
          detail: isDatabaseTimeout(error)
            ? `did not answer within ${CONNECT_TIMEOUT_MS / 1000} s; check DATABASE_URL and that the server is running`
            : `cannot connect (${connectionError(error)}); check DATABASE_URL and that the server is running`,
          code: 5,
        },
        skipped('migrations', schema, 'database unreachable'),
        skipped('run lock', schema, 'database unreachable'),
      ];
    }
    return [
      {
        check: 'database',
        subject: shown,
        status: 'ok',
        detail: `reachable (PostgreSQL ${version})`,
        code: 0,
      },
      await orFailed('migrations', schema, () => checkMigrations(db, config.schema, shown)),
      await orFailed('run lock', schema, () => checkLock(db, schema)),
    ];
  } finally {
    // Ends the pool too.
    await db.destroy();
  }
}

/** Bounded even without a statement timeout: `select 1` answers at once on a live server. */
const PROBE: pg.QueryConfig & { query_timeout: number } = {
  text: 'select 1',
  query_timeout: CONNECT_TIMEOUT_MS,
};

/** A check that could not be made on a reachable database: its row fails, the others stand. */
async function orFailed(
  check: CheckRow['check'],
  subject: string,
  run: () => Promise<CheckRow>,
): Promise<CheckRow> {
  try {
    return await run();
  } catch (error) {
    return {
      check,
      subject,
      status: 'failed',
      detail: `could not be read (${connectionError(error)})`,
      code: isDatabaseTimeout(error) ? 5 : 1,
    };
  }
}

async function checkMigrations(db: Kysely<Database>, schema: string, where: string): Promise<CheckRow> {
  const state = await migrationState(db, schema);
  const subject = `schema ${schema}`;
  if (state.unknown.length > 0)
    return {
      check: 'migrations',
      subject,
      status: 'failed',
      detail: newerWarehouse(state, schema, where),
      code: 2,
    };
  if (state.pending.length === 0)
    return {
      check: 'migrations',
      subject,
      status: 'ok',
      detail: `at ${state.current ?? '?'} (latest)`,
      code: 0,
    };
  return {
    check: 'migrations',
    subject,
    status: 'failed',
    detail: notMigrated(state, schema, where),
    code: 2,
  };
}

async function checkLock(db: Kysely<Database>, subject: string): Promise<CheckRow> {
  const holder = await runLockHolder(db);
  // Held is no failure: a run in progress is the normal state of a busy warehouse.
  return {
    check: 'run lock',
    subject,
    status: 'ok',
    detail: holder === null ? 'free' : `held by ${describeHolderOnly(holder)}`,
    code: 0,
  };
}

function skipped(check: CheckRow['check'], subject: string, why: string): CheckRow {
  return { check, subject, status: 'skipped', detail: `not checked: ${why}`, code: 0 };
}

/** pg's messages name host and port, never the password. */
function connectionError(error: unknown): string {
  const code = error instanceof Error ? (error as { code?: string }).code : undefined;
  return code ? `${code}: ${errorMessage(error)}` : errorMessage(error);
}

type Endpoint = { name: string; ask: () => Promise<unknown[]> };

/**
 * One small request per endpoint, one attempt each (a check reports, it does not ride out a
 * blip): a one-day window (limit 1) for the windowed resources, the lists of tests, heatmaps, and
 * the detail of the first test listed, when there is one.
 */
async function checkSource(
  config: Readonly<Config>,
  source: Config['sources'][number],
  logger: Logger,
): Promise<CheckRow[]> {
  const client = createApiClient({
    source,
    timeoutMs: config.requestTimeoutMs,
    retry: { maxAttempts: 1 },
    logger,
  });
  const yesterday = addDays(todayUtc(new Date()), -1);
  const window = { startdate: yesterday, enddate: addDays(yesterday, 1), limit: 1 };
  const firstId: Partial<Record<(typeof TEST_KINDS)[number], string>> = {};
  const listTests = async (kind: TestKind) => {
    const tests = await client.listTests(kind);
    const id = (tests[0] as { id?: unknown } | undefined)?.id;
    if (typeof id === 'string' || typeof id === 'number') firstId[kind] = String(id);
    return tests;
  };
  // Every snapshot resource's list (src/schemas/resource-names.ts): a new one is a compile error here.
  const snapshotLists = {
    abtesting: () => listTests('abtesting'),
    personalization: () => listTests('personalization'),
    heatmaps: () => client.heatmaps(),
  } satisfies Record<SnapshotResource, () => Promise<unknown[]>>;
  const lists: Endpoint[] = [
    ...WINDOWED_RESOURCES.map((resource) => ({
      name: resource,
      ask: () => client.window(resource, window, { day: yesterday }),
    })),
    ...SNAPSHOT_RESOURCES.map((resource) => ({ name: resource, ask: snapshotLists[resource] })),
  ];
  const outcomes = await Promise.all(lists.map((endpoint) => ask(endpoint)));
  const listed = new Set(outcomes.filter((o) => o.error === undefined).map((o) => o.name));
  const details = await Promise.all(
    TEST_KINDS.map((kind) => {
      const id = firstId[kind];
      return id === undefined
        ? Promise.resolve<Outcome>({
            name: `${kind}/detail`,
            skipped: listed.has(kind) ? `${kind} lists no test` : `the list of ${kind} failed`,
          })
        : ask({ name: `${kind}/detail`, ask: () => client.testResults(kind, id) });
    }),
  );
  const all = [...outcomes, ...details];
  const answered = all.filter((o) => o.error === undefined && o.skipped === undefined);
  const errors = all.flatMap((o) => (o.error === undefined ? [] : [o.error]));
  const rejected = errors.find((e) => e instanceof AuthError);
  const forbiddenEverywhere =
    answered.length === 0 &&
    errors.length > 0 &&
    errors.every((e) => e instanceof EndpointRefusedError && e.status === 403);
  const keyRow: CheckRow =
    rejected !== undefined || forbiddenEverywhere
      ? {
          check: 'api key',
          subject: source.name,
          status: 'failed',
          detail:
            rejected !== undefined
              ? `rejected (HTTP ${rejected.context.status ?? '?'}): check the source's API key`
              : 'rejected (HTTP 403 from every endpoint): this key may read nothing',
          code: 3,
        }
      : answered.length > 0 || errors.some((e) => e instanceof EndpointRefusedError)
        ? { check: 'api key', subject: source.name, status: 'ok', detail: 'accepted', code: 0 }
        : {
            check: 'api key',
            subject: source.name,
            status: 'failed',
            detail: `not known: no endpoint answered at ${client.baseUrl}`,
            code: 1,
          };
  const keyRejected = keyRow.code === 3;
  return [
    keyRow,
    ...all.map((o): CheckRow => {
      const subject = `${source.name}/${o.name}`;
      if (o.skipped !== undefined) return skipped('endpoint', subject, o.skipped);
      if (o.error === undefined)
        return { check: 'endpoint', subject, status: 'ok', detail: `answered (${o.items} item(s))`, code: 0 };
      return {
        check: 'endpoint',
        subject,
        status: 'failed',
        detail: o.error.message,
        code: keyRejected ? 3 : 1,
      };
    }),
  ];
}

interface Outcome {
  name: string;
  items?: number;
  error?: Error;
  skipped?: string;
}

async function ask(endpoint: Endpoint): Promise<Outcome> {
  try {
    return { name: endpoint.name, items: (await endpoint.ask()).length };
  } catch (error) {
    // The client's errors carry the base URL and path, never the key.
    return {
      name: endpoint.name,
      error: error instanceof ApiError ? error : new Error(`failed: ${errorMessage(error)}`),
    };
  }
}
