/**
 * A server that changes how it reads requests between two runs: the change of what the tool
 * learned is kept (reading_changes, one row per changed field), said in one warning line, and
 * shown by `status`. A run that learned nothing different keeps no row.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { createLogger, type Logger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { statusReport } from '../../src/status/status-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

const FROM = '2026-03-01';
const TO = '2026-03-08';
const NIGHT = new Date('2026-03-10T03:00:00.000Z');
const CHANGED = 'server reading changed';

describe('the history of a server reading', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let lines: Record<string, unknown>[] = [];
  const logger = (): Logger => {
    const destination = new PassThrough();
    destination.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    return createLogger({ level: 'warn', pretty: false, destination });
  };
  const backfill = () =>
    runAgainst(t, sim, {
      now: NIGHT,
      logger: logger(),
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback'] },
    });
  const history = () => t.db.selectFrom('reading_changes').selectAll().orderBy('change_id').execute();

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 30, from: FROM, to: TO, order: 'oldest-first' });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('a first run learns the reading: learning is no change', async () => {
    expect((await backfill()).status).toBe('ok');
    expect(await history()).toEqual([]);
    expect(lines.filter((l) => l.msg === CHANGED)).toEqual([]);
  });

  it('a server that stops listing its items oldest first: one row, one warning line, shown by status', async () => {
    sim.setOptions({ order: 'random' });
    lines = [];
    const run = await backfill();
    expect(run.status).toBe('ok');
    const rows = await history();
    expect(rows).toEqual([
      expect.objectContaining({
        source_id: 'main',
        resource: 'feedback',
        field: 'order',
        from_value: 'oldest-first',
        to_value: 'unordered',
        run_id: run.runId,
        evidence: 'responses listed their items in both orders',
      }),
    ]);
    expect(lines.filter((l) => l.msg === CHANGED)).toEqual([
      expect.objectContaining({
        level: 'warn',
        source: 'main',
        resource: 'feedback',
        field: 'order',
        from: 'oldest-first',
        to: 'unordered',
      }),
    ]);

    const report = await statusReport(t.db, '2026-03-10');
    expect(report.readingChanges).toEqual([
      {
        source: 'main',
        resource: 'feedback',
        field: 'order',
        from: 'oldest-first',
        to: 'unordered',
        changedAt: rows[0]?.changed_at.toISOString(),
        runId: run.runId,
        evidence: 'responses listed their items in both orders',
      },
    ]);
    expect(renderStatus(report)).toContain(
      `server reading changes (the last per source; history in reading_changes):\n  main/feedback order: oldest-first -> unordered (run ${run.runId}, ${rows[0]?.changed_at.toISOString()}): responses listed their items in both orders\n`,
    );
  });

  it('a run whose reading did not change writes no row and says nothing', async () => {
    lines = [];
    expect((await backfill()).status).toBe('ok');
    expect(await history()).toHaveLength(1);
    expect(lines.filter((l) => l.msg === CHANGED)).toEqual([]);
  });
});
