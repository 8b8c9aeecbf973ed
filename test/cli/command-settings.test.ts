import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeNextRun } from '../../src/cli/schedule-run.js';
import { loadConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('a config file that is not valid JSON', () => {
  it('is named with the line and column where it breaks (a trailing comma), not its content', () => {
    const text =
      '{ "sources": [\n  { "name": "shop", "base_url": "https://api.example.com", "api_key": "CANARY" },\n] }\n';
    let error: unknown;
    try {
      loadConfig({ env: { INSIGHTS_CONFIG: 'sources.json' }, readFile: () => text });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toBe(
      'invalid configuration: INSIGHTS_CONFIG: a JSON file (sources.json is not valid JSON at line 3, column 1)',
    );
    expect(message).not.toContain('CANARY');
  });
});

describe('schedule', () => {
  it('names the next run in its timezone and in UTC', () => {
    expect(describeNextRun(new Date('2026-03-29T01:00:00Z'), 'Europe/Berlin')).toBe(
      '2026-03-29 03:00 Europe/Berlin (2026-03-29 01:00 UTC)',
    );
  });

  it('says UTC once when the schedule runs in UTC', () => {
    expect(describeNextRun(new Date('2026-03-29T03:00:00Z'), 'UTC')).toBe('2026-03-29 03:00 UTC');
    expect(describeNextRun(new Date('2026-03-29T03:00:00Z'), 'Etc/UTC')).toBe('2026-03-29 03:00 Etc/UTC');
  });

  it('names UTC beside a zone that happens to sit at offset 0 today', () => {
    expect(describeNextRun(new Date('2026-01-10T03:00:00Z'), 'Europe/London')).toBe(
      '2026-01-10 03:00 Europe/London (2026-01-10 03:00 UTC)',
    );
  });
});

describe('backfill of days that have not happened yet', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('says so in one line and exits 0, with no run recorded', async () => {
    const from = addDays(todayUtc(new Date()), 2);
    const to = addDays(from, 3);
    const result = await runCli(
      ['backfill', '--from', from, '--to', to],
      cliEnv({ DATABASE_URL: t.url, INSIGHTS_API_URL: 'http://127.0.0.1:9', INSIGHTS_API_KEY: 'k' }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `nothing to backfill: ${from}..${to} is after today (UTC, ${todayUtc(new Date())}); no day of it has happened yet\n`,
    );
    expect(await t.db.selectFrom('sync_runs').selectAll().execute()).toEqual([]);
  }, 60_000);
});

describe('a setting only another command uses', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('a bad INSIGHTS_SCHEDULE does not break status, and still stops schedule (exit 2)', async () => {
    const env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_SCHEDULE: '0 25 * * *',
      INSIGHTS_API_URL: 'http://127.0.0.1:9',
      INSIGHTS_API_KEY: 'k',
    });
    const status = await runCli(['status'], env);
    expect(status.stderr).not.toContain('INSIGHTS_SCHEDULE');
    // It runs: its one reason for exit 1 is the configured source no run has loaded yet.
    expect(status.code, status.stderr).toBe(1);
    expect(status.stdout).toContain(
      'needs attention: default: configured, never loaded (no run has tried it yet)',
    );
    const schedule = await runCli(['schedule'], env);
    expect(schedule.code).toBe(2);
    expect(schedule.stderr).toContain('INSIGHTS_SCHEDULE:');
  }, 60_000);
});

describe('serve, which never calls the API', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('starts with only DATABASE_URL, a webhook token and the source name (no INSIGHTS_API_URL or _KEY)', async () => {
    const token = 'a'.repeat(16) + 'b'.repeat(16);
    const cli = startCli(
      ['serve'],
      cliEnv({
        DATABASE_URL: t.url,
        INSIGHTS_SOURCE_NAME: 'shop',
        INSIGHTS_WEBHOOK_TOKEN: token,
        // serve's own settings: any free port, on loopback.
        INSIGHTS_WEBHOOK_PORT: '0',
        INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      }),
    );
    let stdout = '';
    cli.child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    await expect
      .poll(() => stdout, { timeout: 30_000, interval: 50 })
      .toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/webhooks\/shop\/<token>/);
    const port = /127\.0\.0\.1:(\d+)/.exec(stdout)?.[1];
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect(result.code, result.stderr).toBe(0);
    expect(`${result.stdout}${result.stderr}`).not.toContain(token);
  }, 60_000);

  it('a bad INSIGHTS_WEBHOOK_PORT does not break status, and still stops serve (exit 2)', async () => {
    const env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_WEBHOOK_PORT: 'CANARY-8080',
      INSIGHTS_WEBHOOK_TOKEN: 'c'.repeat(32),
    });
    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    const serve = await runCli(['serve'], env);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('INSIGHTS_WEBHOOK_PORT:');
    expect(serve.stderr).not.toContain('CANARY');
  }, 60_000);
});

describe('the sources serve reads (sourcesFor webhooks)', () => {
  const token = 'd'.repeat(32);

  it('need no API URL or key: a bad key stops sync, not serve', () => {
    const env = {
      INSIGHTS_SOURCE_NAME: 'shop',
      INSIGHTS_WEBHOOK_TOKEN: token,
      INSIGHTS_API_KEY: 'CANARY\nkey',
    };
    expect(loadConfig({ env, sourcesFor: 'webhooks' }).sources).toEqual([
      { name: 'shop', baseUrl: '', apiKey: '', webhookToken: token },
    ]);
    expect(() => loadConfig({ env })).toThrow(/INSIGHTS_API_URL is not set .*INSIGHTS_API_KEY: /);
  });

  it('in INSIGHTS_CONFIG, a source without api_key is a webhook source for serve and an error for sync', () => {
    const text = JSON.stringify({
      sources: [{ name: 'shop', base_url: 'https://api.example.com', webhook_token: token }],
    });
    const options = { env: { INSIGHTS_CONFIG: 'sources.json' }, readFile: () => text };
    expect(loadConfig({ ...options, sourcesFor: 'webhooks' }).sources).toEqual([
      { name: 'shop', baseUrl: 'https://api.example.com', apiKey: '', webhookToken: token },
    ]);
    expect(() => loadConfig(options)).toThrow('INSIGHTS_CONFIG sources[0].api_key is not set');
  });
});
