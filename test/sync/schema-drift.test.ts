import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeDbtSources } from '../../src/dbt/dbt-sources.js';
import { createLogger } from '../../src/log/logger.js';
import { loadReportData } from '../../src/report/report-data.js';
import { isWindowed } from '../../src/schemas/resource-names.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-10';
const NEW_FIELDS =
  'new fields from the API that the spec does not describe: kept in raw, listed in schema_drift';

/** The API starts sending fields the spec does not describe between two nightly runs. */
describe('the inventory of unknown fields', () => {
  let t: TestDatabase;
  let sim: Simulator;
  const lines: { msg?: string; resource?: string; fields?: string[] }[] = [];
  const logger = () => {
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    return createLogger({ level: 'warn', pretty: false, destination });
  };
  const inventory = () =>
    t.db
      .selectFrom('schema_drift')
      .selectAll()
      .where('resource', '=', 'feedback')
      .orderBy('field_path')
      .execute();

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('lists a field from the first day that carries it, and says so in one line when it first appears', async () => {
    const settings = { startDate: FROM };
    await runAgainst(t, sim, { now: new Date('2026-03-06T04:00:00.000Z'), settings, logger: logger() });
    expect(await inventory()).toEqual([]);

    sim.setOptions({ extraFields: true });
    const secondAt = new Date('2026-03-09T04:00:00.000Z');
    const second = await runAgainst(t, sim, { now: secondAt, settings, logger: logger() });
    // The run fetched 2026-03-06 (still open) to 2026-03-09: the earliest of them carries the fields.
    const rows = await inventory();
    expect(rows.map((r) => [r.field_path, r.first_seen_day, r.first_seen_at, r.last_seen_at])).toEqual([
      ['x_extra', '2026-03-06', secondAt, secondAt],
      ['x_score', '2026-03-06', secondAt, secondAt],
    ]);
    for (const row of rows) {
      expect(Number(row.last_run_id)).toBe(second.runId);
      expect(row.last_run_items).toBeGreaterThan(0);
      expect(row.last_run_items).toBe(row.last_run_total);
    }
    // The snapshots' own fields: test/sync/schema-drift-snapshots.test.ts.
    const said = lines.filter((l) => l.msg === NEW_FIELDS && isWindowed(l.resource ?? ''));
    expect(said.map((l) => [l.resource, l.fields]).sort()).toEqual([
      ['feedback', ['x_extra', 'x_score']],
      ['recordings', ['x_extra', 'x_score']],
      ['survey', ['x_extra', 'x_score']],
    ]);

    // The report lists them, each with the share of the last run's items that carried it.
    const report = await loadReportData(t.db, { from: FROM, to: TO }, secondAt);
    expect(report.newFields.map((f) => [f.resource, f.field, f.firstSeenDay, f.lastRunShare])).toEqual(
      expect.arrayContaining([
        ['feedback', 'x_extra', '2026-03-06', 1],
        ['survey', 'x_score', '2026-03-06', 1],
        ['recordings', 'x_extra', '2026-03-06', 1],
      ]),
    );
    expect(report.newFields.filter((f) => isWindowed(f.resource))).toHaveLength(6);

    // dbt-sources names them in the meta of the tables whose raw column holds them, only there.
    const dbt = parse(await writeDbtSources(t.pool, t.schema)) as {
      sources: { tables: { name: string; config: { meta: Record<string, unknown> } }[] }[];
    };
    const metaOf = (name: string) => dbt.sources[0]?.tables.find((table) => table.name === name)?.config.meta;
    expect(metaOf('feedback')?.new_fields_from_api).toEqual([
      {
        field: 'x_extra',
        source: 'main',
        first_seen_day: '2026-03-06',
        last_seen_at: secondAt.toISOString(),
      },
      {
        field: 'x_score',
        source: 'main',
        first_seen_day: '2026-03-06',
        last_seen_at: secondAt.toISOString(),
      },
    ]);
    expect(metaOf('survey_answers')?.new_fields_from_api).toHaveLength(2);
    expect(metaOf('visitors')).not.toHaveProperty('new_fields_from_api');

    // The next run no longer sees them: they stay listed, at a share of 0 of its items.
    sim.setOptions({ extraFields: false });
    await runAgainst(t, sim, { now: new Date('2026-03-10T04:00:00.000Z'), settings, logger: logger() });
    const after = await inventory();
    expect(after.map((r) => [r.field_path, r.last_seen_at, r.last_run_items])).toEqual([
      ['x_extra', secondAt, 0],
      ['x_score', secondAt, 0],
    ]);
    expect(after[0]?.last_run_total).toBeGreaterThan(0);
    expect(lines.filter((l) => l.msg === NEW_FIELDS && isWindowed(l.resource ?? ''))).toHaveLength(3);
  });
});
