import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeDbtSources } from '../../src/dbt/dbt-sources.js';
import { createLogger } from '../../src/log/logger.js';
import { loadReportData } from '../../src/report/report-data.js';
import { SNAPSHOT_RESOURCES } from '../../src/schemas/resource-names.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { schemaDriftStatus } from '../../src/status/schema-drift-status.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-10';
const NEW_FIELDS =
  'new fields from the API that the spec does not describe: kept in raw, listed in schema_drift';
const snapshot = (resource: string | undefined) =>
  (SNAPSHOT_RESOURCES as readonly (string | undefined)[]).includes(resource);

/** Tests, their variants and heatmaps start carrying fields the spec does not describe. */
describe('the inventory of unknown fields of the snapshots', () => {
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
  const said = () => lines.filter((l) => l.msg === NEW_FIELDS && snapshot(l.resource));
  const inventory = () =>
    t.db
      .selectFrom('schema_drift')
      .selectAll()
      .where('resource', 'in', ['abtesting', 'personalization', 'heatmaps'])
      .orderBy('resource')
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

  it('lists each new field of a snapshot once, with the day it was first seen, and says so once', async () => {
    const settings = { startDate: FROM };
    await runAgainst(t, sim, { now: new Date('2026-03-06T04:00:00.000Z'), settings, logger: logger() });
    expect(await inventory()).toEqual([]);

    sim.setOptions({ extraFields: true });
    const secondAt = new Date('2026-03-09T04:00:00.000Z');
    const second = await runAgainst(t, sim, { now: secondAt, settings, logger: logger() });
    const rows = await inventory();
    const fields = ['results[].x_extra', 'results[].x_score', 'x_extra', 'x_score'];
    expect(rows.map((r) => [r.resource, r.field_path, r.first_seen_day, r.first_seen_at])).toEqual([
      ...fields.map((f) => ['abtesting', f, '2026-03-09', secondAt]),
      ['heatmaps', 'x_extra', '2026-03-09', secondAt],
      ['heatmaps', 'x_score', '2026-03-09', secondAt],
      ...fields.map((f) => ['personalization', f, '2026-03-09', secondAt]),
    ]);
    // Every test and heatmap carried them: a share of 1 of the snapshot's items.
    for (const row of rows) {
      expect(Number(row.last_run_id)).toBe(second.runId);
      expect(row.last_run_items).toBeGreaterThan(0);
      expect(row.last_run_items).toBe(row.last_run_total);
    }
    expect(
      said()
        .map((l) => [l.resource, l.fields])
        .sort(),
    ).toEqual([
      ['abtesting', fields],
      ['heatmaps', ['x_extra', 'x_score']],
      ['personalization', fields],
    ]);

    // status (and status --json) list them beside the windowed ones.
    const status = await schemaDriftStatus(t.db);
    expect(status.filter((f) => f.resource === 'heatmaps').map((f) => f.field)).toEqual([
      'x_extra',
      'x_score',
    ]);
    // The report, with the share of the last run's items.
    const report = await loadReportData(t.db, { from: FROM, to: TO }, secondAt);
    expect(
      report.newFields.filter((f) => f.resource === 'abtesting').map((f) => [f.field, f.lastRunShare]),
    ).toEqual(fields.map((f) => [f, 1]));
    // dbt-sources: in the meta of the table whose raw holds the field (a variant's: test_results,
    // named once for both kinds of test).
    const dbt = parse(await writeDbtSources(t.pool, t.schema)) as {
      sources: { tables: { name: string; config: { meta: Record<string, unknown> } }[] }[];
    };
    const metaOf = (name: string) =>
      (dbt.sources[0]?.tables.find((table) => table.name === name)?.config.meta.new_fields_from_api ??
        []) as {
        field: string;
        first_seen_day: string;
      }[];
    expect(metaOf('heatmaps').map((f) => [f.field, f.first_seen_day])).toEqual([
      ['x_extra', '2026-03-09'],
      ['x_score', '2026-03-09'],
    ]);
    expect(metaOf('ab_tests').map((f) => f.field)).toEqual(['x_extra', 'x_score']);
    expect(metaOf('test_results').map((f) => f.field)).toEqual(['x_extra', 'x_score']);

    // A second run with the same fields: seen again, said no more.
    const thirdAt = new Date('2026-03-10T04:00:00.000Z');
    await runAgainst(t, sim, { now: thirdAt, settings, logger: logger() });
    const again = await inventory();
    expect(again.map((r) => [r.field_path, r.first_seen_day, r.first_seen_at, r.last_seen_at])).toEqual(
      rows.map((r) => [r.field_path, '2026-03-09', secondAt, thirdAt]),
    );
    expect(said()).toHaveLength(3);
  });
});
