import { describe, expect, it } from 'vitest';
import { nightlySync } from '../../jobs/nightly-sync.js';
import { loadConfig } from '../../src/config/config.js';
import { ConfigError } from '../../src/errors.js';
import { cronProblem, cronSchedule } from '../../src/time/cron-schedule.js';

const SOURCE = { INSIGHTS_API_URL: 'https://api.example.com', INSIGHTS_API_KEY: 'key' };

describe('schedule settings', () => {
  it('default to 03:00 UTC every night and a 25 s grace period; the nightly job runs a sync', () => {
    const config = loadConfig({ env: SOURCE });
    expect(config).toMatchObject({ schedule: '0 3 * * *', timezone: 'UTC', shutdownGraceMs: 25_000 });
    const job = nightlySync(config);
    expect(job).toEqual({
      name: 'nightly-sync',
      cron: '0 3 * * *',
      timezone: 'UTC',
      request: { trigger: 'schedule' },
    });
    expect(cronSchedule(job.cron, job.timezone).nextAfter(new Date('2026-05-01T03:00:00Z'))).toEqual(
      new Date('2026-05-02T03:00:00Z'),
    );
  });

  it('read a cron expression, an IANA timezone and a grace period', () => {
    const config = loadConfig({
      env: {
        ...SOURCE,
        INSIGHTS_SCHEDULE: '30 2 * * 1-5',
        INSIGHTS_TIMEZONE: 'Europe/Berlin',
        INSIGHTS_SHUTDOWN_GRACE_MS: '5000',
      },
    });
    expect(config).toMatchObject({
      schedule: '30 2 * * 1-5',
      timezone: 'Europe/Berlin',
      shutdownGraceMs: 5000,
    });
  });

  it('are all reported together when wrong, naming what is expected', () => {
    let error: unknown;
    try {
      loadConfig({
        env: {
          ...SOURCE,
          INSIGHTS_SCHEDULE: '0 25 * * *',
          INSIGHTS_TIMEZONE: 'Europe/Atlantis',
          INSIGHTS_SHUTDOWN_GRACE_MS: '25s',
        },
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems.map((p) => p.variable)).toEqual([
      'INSIGHTS_SCHEDULE',
      'INSIGHTS_TIMEZONE',
      'INSIGHTS_SHUTDOWN_GRACE_MS',
    ]);
  });

  it('explain an expression that is malformed or never fires, and an unknown zone', () => {
    expect(cronProblem('0 3 * * *', 'America/New_York')).toBeUndefined();
    expect(cronProblem('@daily', 'UTC')).toBeUndefined();
    expect(cronProblem('0 3 * *', 'UTC')).toMatch(/invalid cron expression "0 3 \* \*".*5 or 6 fields/);
    expect(cronProblem('0 0 31 2 *', 'UTC')).toMatch(/invalid cron expression|never fires/);
    expect(cronProblem('0 3 * * *', 'Mars/Olympus')).toBe('unknown IANA timezone "Mars/Olympus"');
    expect(() => cronSchedule('61 * * * *', 'UTC')).toThrow(/invalid cron expression/);
  });

  it('support node-cron forms: seconds, last day of month, nicknames', () => {
    const at = (expression: string, after: string) =>
      cronSchedule(expression, 'UTC').nextAfter(new Date(after)).toISOString();
    expect(at('30 0 3 * * *', '2026-05-01T00:00:00Z')).toBe('2026-05-01T03:00:30.000Z');
    expect(at('0 3 L * *', '2026-02-01T00:00:00Z')).toBe('2026-02-28T03:00:00.000Z');
    expect(at('@daily', '2026-05-01T00:00:00Z')).toBe('2026-05-02T00:00:00.000Z');
  });
});
