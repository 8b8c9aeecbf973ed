/**
 * `status` of an agency's warehouse stays readable. Above 10 sources the text
 * is one line per source; `--source NAME` shows one source's resources, `--details` all of them;
 * `--json` is always complete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus, SUMMARY_ABOVE } from '../../src/cli/status.js';
import { ALL_RESOURCES, SNAPSHOT_RESOURCES } from '../../src/schemas/resource-names.js';
import { MAX_LAG_DAYS } from '../../src/status/attention.js';
import { statusReport } from '../../src/status/status-report.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const TODAY = todayUtc(new Date());
const SOURCES = Array.from({ length: 12 }, (_, i) => `site${String(i + 1).padStart(2, '0')}`);

describe('status of many sources', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db
      .insertInto('sources')
      .values(SOURCES.map((source_id) => ({ source_id, base_url: 'http://insights.test' })))
      .execute();
    await t.db
      .insertInto('watermarks')
      .values(
        SOURCES.map((source_id, i) => ({
          source_id,
          resource: 'feedback',
          start_day: addDays(TODAY, -30),
          day: addDays(TODAY, -2 - i),
        })),
      )
      .execute();
    await t.db
      .insertInto('sync_windows')
      .values({
        source_id: 'site07',
        resource: 'survey',
        day: addDays(TODAY, -3),
        status: 'failed',
        attempts: 1,
        last_error: 'HTTP 500',
      })
      .execute();
  });
  afterAll(() => t.drop());

  it(`above ${SUMMARY_ABOVE} sources: one line per source, its worst lag, and which ones need attention`, async () => {
    const text = renderStatus(await statusReport(t.db, TODAY));
    const lines = text.split('\n');
    for (const [i, source] of SOURCES.entries()) {
      const row = lines.filter((line) => line.startsWith(`${source} `));
      expect(row, source).toHaveLength(1);
      expect(row[0]).toMatch(new RegExp(`^${source}\\s+${1 + i}\\s`));
      // site07 has a failed window; a source whose lag is above MAX_LAG_DAYS needs attention too.
      expect(row[0]).toContain(source === 'site07' || 1 + i > MAX_LAG_DAYS ? 'needs attention' : 'ok');
    }
    expect(text).toContain('12 sources: `status --source NAME`');
    expect(text).not.toMatch(/^site01\s+feedback/m);
  });

  it('--details: each resource of every source', async () => {
    const text = renderStatus(await statusReport(t.db, TODAY), { details: true });
    for (const source of SOURCES) expect(text).toMatch(new RegExp(`^${source}\\s+feedback`, 'm'));
  });

  it('lists every resource of the registry, a snapshot one as a snapshot', async () => {
    const report = await statusReport(t.db, TODAY);
    expect(report.resources.filter((r) => r.source === 'site01').map((r) => r.resource)).toEqual(
      ALL_RESOURCES,
    );
    const text = renderStatus(report, { details: true });
    for (const resource of SNAPSHOT_RESOURCES)
      expect(text).toMatch(new RegExp(`^site01\\s+${resource}\\s+snapshot\\s`, 'm'));
  });

  it('the command: --source shows that source only; an unknown source is a usage error naming the others', async () => {
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema });
    const one = await runCli(['status', '--source', 'site07'], env);
    expect(one.stdout).toMatch(/^site07\s+survey\s.*1 \(last: HTTP 500\)/m);
    expect(one.stdout).not.toContain('site08');
    expect(one.code).toBe(1);
    const unknown = await runCli(['status', '--source', 'nowhere'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /--source nowhere: no such source in the configuration or this warehouse \(known: site01, site02/,
    );
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { resources: unknown[] };
    expect(json.resources).toHaveLength(12 * ALL_RESOURCES.length);
  });
});
