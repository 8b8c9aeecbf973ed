import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireRunLock } from '../../src/db/run-lock.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { type CliResult, cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase, withSecretPassword } from '../helpers/database.js';

/** `insights-sync check`, run as a user runs it. */

const TODAY = todayUtc(new Date());
/** In the API key and the database password: no output may ever contain it. */
const CANARY = 'CANARY-9f3a';
const KEY = `${CANARY}-key`;

interface Row {
  check: string;
  subject: string;
  status: 'ok' | 'failed' | 'skipped' | 'warning';
  detail: string;
  code: number;
}
interface Report {
  ok: boolean;
  exitCode: number;
  checks: Row[];
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('insights-sync check', () => {
  let t: TestDatabase;
  /** The test database's URL with a password in it: every output must mask it. */
  let database: { url: string; secret: string };
  let sim: Simulator;
  let broken: Simulator;
  let env: Record<string, string>;

  beforeAll(async () => {
    t = await createTestDatabase();
    database = withSecretPassword(t.url, `${CANARY}-password`);
    sim = await startSimulator({ seed: 5, from: addDays(TODAY, -3), to: addDays(TODAY, -1), apiKey: KEY });
    // One endpoint the server does not serve (404): its row fails, the others pass.
    broken = await startSimulator({
      seed: 5,
      from: addDays(TODAY, -3),
      to: addDays(TODAY, -1),
      apiKey: KEY,
      missing: ['heatmaps'],
    });
    env = cliEnv({ DATABASE_URL: database.url, INSIGHTS_API_URL: sim.url, INSIGHTS_API_KEY: KEY });
  });
  afterAll(async () => {
    await Promise.all([sim.stop(), broken.stop()]);
    await t.drop();
  });

  async function check(extra: Record<string, string> = {}): Promise<{ result: CliResult; report: Report }> {
    const result = await runCli(['check', '--json'], { ...env, ...extra });
    noSecret(result);
    return { result, report: JSON.parse(result.stdout) as Report };
  }

  function noSecret(result: CliResult): void {
    const output = `${result.stdout}${result.stderr}`;
    expect(output).not.toContain(CANARY);
    expect(output).not.toContain(database.secret);
  }

  const row = (report: Report, check: string, subject?: string): Row | undefined =>
    report.checks.find((r) => r.check === check && (subject === undefined || r.subject === subject));

  it('all ok: every row passes, exit 0, one request per endpoint', async () => {
    sim.resetStats();
    const { result, report } = await check();
    expect(result.code, result.stderr).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.checks.filter((r) => r.status === 'failed')).toEqual([]);
    const masked = new URL(database.url);
    masked.password = '***';
    expect(row(report, 'database')?.subject).toBe(masked.toString());
    expect(row(report, 'migrations')?.detail).toMatch(/^at \S+ \(latest\)$/);
    expect(row(report, 'run lock')?.detail).toBe('free');
    expect(row(report, 'api key')?.detail).toBe('accepted');
    const endpoints = report.checks.filter((r) => r.check === 'endpoint').map((r) => r.subject);
    expect(endpoints.sort()).toEqual(
      [
        'feedback',
        'survey',
        'recordings',
        'abtesting',
        'personalization',
        'heatmaps',
        'abtesting/detail',
        'personalization/detail',
      ]
        .map((e) => `default/${e}`)
        .sort(),
    );
    expect(
      report.checks.filter((r) => r.check === 'endpoint').every((r) => r.status === 'ok'),
      result.stdout,
    ).toBe(true);
    // One request per endpoint: six lists and windows, and the detail of the first test of each kind.
    const byPath = sim.stats().byPath;
    expect(sim.stats().requests).toBe(8);
    expect(Object.values(byPath).every((count) => count === 1)).toBe(true);
  }, 60_000);

  it('prints one table by default', async () => {
    const result = await runCli(['check'], env);
    noSecret(result);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.split('\n')[0]).toMatch(/^check\s+subject\s+status\s+detail$/);
    expect(result.stdout).toContain('all checks passed');
  }, 60_000);

  it('a wrong key: exit 3 and the key row says it was rejected', async () => {
    const { result, report } = await check({ INSIGHTS_API_KEY: `${CANARY}-wrong` });
    expect(result.code, result.stderr).toBe(3);
    expect(row(report, 'api key')).toMatchObject({ status: 'failed', code: 3 });
    expect(row(report, 'api key')?.detail).toContain('rejected (HTTP 401)');
    // The database rows are checked still.
    expect(row(report, 'database')?.status).toBe('ok');
  }, 60_000);

  it('one endpoint failing: exit 1 and only that row fails', async () => {
    const { result, report } = await check({ INSIGHTS_API_URL: broken.url });
    expect(result.code, result.stderr).toBe(1);
    const failed = report.checks.filter((r) => r.status === 'failed');
    expect(failed.map((r) => r.subject)).toEqual(['default/heatmaps']);
    expect(failed[0]?.detail).toContain('404');
    expect(row(report, 'api key')?.status).toBe('ok');
  }, 60_000);

  it('an unreachable database: exit 5, and the API rows are checked still', async () => {
    const port = await closedPort();
    const { result, report } = await check({
      DATABASE_URL: `postgres://postgres:${CANARY}-password@127.0.0.1:${port}/warehouse`,
    });
    expect(result.code, result.stderr).toBe(5);
    expect(row(report, 'database')).toMatchObject({ status: 'failed', code: 5 });
    expect(row(report, 'database')?.detail).toContain('ECONNREFUSED');
    expect(row(report, 'migrations')?.status).toBe('skipped');
    expect(row(report, 'api key')?.detail).toBe('accepted');
    expect(report.checks.filter((r) => r.check === 'endpoint' && r.status === 'ok')).toHaveLength(8);
  }, 60_000);

  it('an unreachable database and a wrong key: the key wins (exit 3), both rows fail', async () => {
    const port = await closedPort();
    const { result, report } = await check({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/warehouse`,
      INSIGHTS_API_KEY: `${CANARY}-wrong`,
    });
    expect(result.code).toBe(3);
    expect(row(report, 'database')?.status).toBe('failed');
    expect(row(report, 'api key')?.status).toBe('failed');
  }, 60_000);

  it('a database not migrated: the migration row says to run `insights-sync migrate`, and nothing is created', async () => {
    const schema = `unmigrated_${process.pid}`;
    const { result, report } = await check({ INSIGHTS_SCHEMA: schema });
    expect(result.code, result.stderr).toBe(2);
    expect(row(report, 'migrations')).toMatchObject({ status: 'failed', code: 2 });
    expect(row(report, 'migrations')?.detail).toContain('run insights-sync migrate');
    const found = await t.pool.query('select 1 from pg_namespace where nspname = $1', [schema]);
    expect(found.rowCount).toBe(0);
  }, 60_000);

  it('a run holding the lock: the row names its holder (not a failure)', async () => {
    const lock = await acquireRunLock({ url: t.url, schema: t.schema });
    try {
      const { result, report } = await check();
      expect(result.code, result.stderr).toBe(0);
      expect(row(report, 'run lock')?.detail).toMatch(/^held by pid \d+ on host /);
    } finally {
      await lock.release();
    }
  }, 60_000);

  it('an invalid DATABASE_URL: exit 2 naming it, the database rows say why they were not checked, the API is checked', async () => {
    const { result, report } = await check({ DATABASE_URL: `${CANARY}-mysql://user:secret@db/warehouse` });
    expect(result.code, result.stderr).toBe(2);
    expect(row(report, 'configuration')?.detail).toContain('DATABASE_URL:');
    expect(
      report.checks
        .filter((r) => ['database', 'migrations', 'run lock'].includes(r.check))
        .map((r) => r.detail),
    ).toEqual(Array(3).fill('not checked: DATABASE_URL is invalid (see configuration)'));
    expect(row(report, 'api key')?.detail).toBe('accepted');
  }, 60_000);

  it('a configuration that cannot be read at all: exit 2, every other row says why it was not checked', async () => {
    const { result, report } = await check({ INSIGHTS_SCHEMA: `${CANARY}-Schema` });
    expect(result.code, result.stderr).toBe(2);
    expect(row(report, 'configuration')?.detail).toContain('INSIGHTS_SCHEMA:');
    expect(report.checks.slice(1).map((r) => [r.check, r.status, r.detail])).toEqual([
      ['database', 'skipped', 'not checked: the configuration is invalid'],
      ['migrations', 'skipped', 'not checked: the configuration is invalid'],
      ['run lock', 'skipped', 'not checked: the configuration is invalid'],
      ['api key', 'skipped', 'not checked: the configuration is invalid'],
    ]);
  }, 60_000);

  it('a misspelt INSIGHTS_ variable: a warning naming the closest setting; with --strict a failure, exit 2', async () => {
    const typo = { INSIGHTS_CONCURENCY: '8' };
    const { result, report } = await check(typo);
    expect(result.code, result.stderr).toBe(0);
    expect(row(report, 'configuration', 'INSIGHTS_CONCURENCY')).toEqual({
      check: 'configuration',
      subject: 'INSIGHTS_CONCURENCY',
      status: 'warning',
      detail:
        'INSIGHTS_CONCURENCY is not a setting of insights-sync and is ignored: did you mean INSIGHTS_CONCURRENCY?',
      code: 0,
    });
    const strict = await runCli(['check', '--json', '--strict'], { ...env, ...typo });
    expect(strict.code, strict.stderr).toBe(2);
    expect(row(JSON.parse(strict.stdout) as Report, 'configuration', 'INSIGHTS_CONCURENCY')).toMatchObject({
      status: 'failed',
      code: 2,
    });
    // Every other command says so in a log line, and runs.
    const status = await runCli(['status'], { ...env, ...typo, INSIGHTS_TIMEZON: 'UTC' });
    expect(status.stderr).toContain(
      'INSIGHTS_CONCURENCY is not a setting of insights-sync and is ignored: did you mean INSIGHTS_CONCURRENCY?',
    );
    expect(status.stderr).toContain('did you mean INSIGHTS_TIMEZONE?');
    // The text form: a warning row is not "all checks passed".
    const text = await runCli(['check'], { ...env, ...typo });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^checks passed with 1 warning$/m);
    expect(text.stdout).not.toContain('all checks passed');
    // A typo of a setting without the INSIGHTS_ prefix gets its suggestion too.
    const database = await runCli(['status'], { ...env, DATABSE_URL: 'postgres://x@127.0.0.1/y' });
    expect(database.stderr).toContain(
      'DATABSE_URL is not a setting of insights-sync and is ignored: did you mean DATABASE_URL?',
    );
  }, 60_000);

  it('an invalid setting: exit 2 naming it, and the database and API are checked still', async () => {
    const { result, report } = await check({ INSIGHTS_SCHEDULE: `${CANARY} * * * *` });
    expect(result.code, result.stderr).toBe(2);
    expect(row(report, 'configuration')?.detail).toContain('INSIGHTS_SCHEDULE:');
    expect(row(report, 'database')?.status).toBe('ok');
    expect(row(report, 'api key')?.status).toBe('ok');
  }, 60_000);

  describe('many sources', () => {
    /** An agency's sources file: twelve sources on the same server; `client03`'s key is wrong. */
    async function agency(): Promise<Record<string, string>> {
      const names = Array.from({ length: 12 }, (_, i) => `client${String(i + 1).padStart(2, '0')}`);
      const file = join(await mkdtemp(join(tmpdir(), 'check-agency-')), 'sources.json');
      await writeFile(
        file,
        JSON.stringify({
          sources: names.map((name) => ({ name, base_url: sim.url, api_key_env: `KEY_${name}` })),
        }),
      );
      const keys = Object.fromEntries(names.map((n) => [`KEY_${n}`, n === 'client03' ? 'wrong' : KEY]));
      return { INSIGHTS_CONFIG: file, INSIGHTS_API_URL: '', INSIGHTS_API_KEY: '', ...keys };
    }

    it('--source checks that source only: its key and its eight endpoints', async () => {
      const extra = await agency();
      sim.resetStats();
      const result = await runCli(['check', '--json', '--source', 'client05'], { ...env, ...extra });
      noSecret(result);
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout) as Report;
      const subjects = report.checks.filter((r) => r.check === 'endpoint' || r.check === 'api key');
      expect(new Set(subjects.map((r) => r.subject.split('/')[0]))).toEqual(new Set(['client05']));
      expect(sim.stats().requests).toBe(8);
      // The configuration row names a dozen sources without listing them all.
      expect(row(report, 'configuration')?.detail).toBe(
        '12 source(s): client01, client02, client03, client04, client05, client06, client07, client08, client09, client10 and 2 more',
      );
    }, 60_000);

    it('--source naming no configured source: exit 2, saying so', async () => {
      const extra = await agency();
      const result = await runCli(['check', '--json', '--source', 'client99'], { ...env, ...extra });
      expect(result.code, result.stderr).toBe(2);
      const report = JSON.parse(result.stdout) as Report;
      expect(row(report, 'configuration', '--source')).toMatchObject({
        status: 'failed',
        detail: expect.stringMatching(/^no source named client99 is configured \(12 source\(s\): client01, /),
      });
      expect(report.checks.filter((r) => r.check === 'endpoint')).toEqual([]);
    }, 60_000);

    it('--failures: only the rows that did not pass, and how many passed', async () => {
      const extra = await agency();
      const result = await runCli(['check', '--failures'], { ...env, ...extra });
      noSecret(result);
      expect(result.code, result.stderr).toBe(3);
      const lines = result.stdout.trimEnd().split('\n');
      // The header, client03's rejected key and its eight endpoints not passed, a blank line, the verdict.
      const body = lines.slice(1, -2);
      expect(body.length, result.stdout).toBe(9);
      expect(body.every((line) => line.includes('client03'))).toBe(true);
      expect(lines.at(-1)).toMatch(
        /^some checks failed \(exit code 3\); \d+ skipped; \d+ passed, not shown$/,
      );
    }, 60_000);
  });
});
