/**
 * `status` lists the fields the API sends that the spec does not describe (schema_drift): per
 * source and resource, each field with when it was first and last seen.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { recordWindowDrift } from '../../src/load/schema-drift.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-04';
const HEADING = 'fields the spec does not describe (kept in raw; schema_drift):';

describe('the unknown fields in status', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: FROM, to: TO });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  const backfill = (now: Date) =>
    runAgainst(t, sim, {
      now,
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback'] },
    });

  it('shows nothing while the API sends only what the spec describes', async () => {
    await backfill(new Date('2026-03-05T03:00:00.000Z'));
    const report = await statusReport(t.db, '2026-03-05');
    expect(report.schemaDrift).toEqual([]);
    expect(renderStatus(report)).not.toContain(HEADING);
  });

  it('lists each field with when it was first and last seen', async () => {
    sim.setOptions({ extraFields: true });
    const first = new Date('2026-03-06T03:00:00.000Z');
    await backfill(first);
    const last = new Date('2026-03-07T03:00:00.000Z');
    await backfill(last);
    const report = await statusReport(t.db, '2026-03-07');
    const seen = { firstSeenAt: first.toISOString(), lastSeenAt: last.toISOString() };
    expect(report.schemaDrift).toEqual([
      { source: 'main', resource: 'feedback', field: 'x_extra', ...seen },
      { source: 'main', resource: 'feedback', field: 'x_score', ...seen },
    ]);
    expect(renderStatus(report)).toContain(
      `${HEADING}\n  main/feedback x_extra: first seen ${seen.firstSeenAt}, last seen ${seen.lastSeenAt}\n  main/feedback x_score: first seen ${seen.firstSeenAt}, last seen ${seen.lastSeenAt}\n`,
    );
  });

  it('a field name from the API cannot start a line of its own', async () => {
    await recordWindowDrift(t.db, {
      sourceId: 'main',
      resource: 'feedback',
      day: TO,
      runId: null,
      total: 1,
      counts: new Map([['x_\nneeds attention: forged', 1]]),
      seenAt: new Date('2026-03-07T04:00:00.000Z'),
    });
    const shown = renderStatus(await statusReport(t.db, '2026-03-07')).split('\n');
    expect(shown.filter((l) => l.startsWith('needs attention: forged'))).toEqual([]);
    expect(shown.some((l) => l.startsWith('  main/feedback x_') && l.includes('forged'))).toBe(true);
  });
});
