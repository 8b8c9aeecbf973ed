import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { holdsDayRequest, requestFor } from '../../src/extract/server-reading.js';
import { silentLogger } from '../../src/log/logger.js';
import type { WindowedResource } from '../../src/schemas/resource-names.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { SourceHandle } from '../../src/sync/context.js';
import { type JudgedVerdicts, proveQueuedRun } from '../../src/sync/queue-proof.js';
import { loadReadings } from '../../src/sync/reading-store.js';
import { windowMemory } from '../../src/sync/window-memory.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';

/**
 * The queued run's last proof (src/sync/queue-proof.ts) does for caps what the in-process run's
 * end does: a worker that settled a day at a size no cap it knew covered records that size in the
 * ledger (uncapped_served); another worker may prove that size a cap later in the run (a deploy
 * lowered it from 100 to 60, and the day's 72 items came back as 60). The planner reopens such
 * days, whichever worker settled them, and the run reads them again. Where a worker found the
 * reading stale, it also judges every day the run settled against the reading learned by then, on
 * the request the ledger recorded it was settled on (settled_from, settled_to).
 */
const FROM = '2026-03-01' as DayString;
const TO = '2026-03-08' as DayString;
const NOW = new Date('2026-03-12T06:00:00Z');

/** The planner's last proof of a queued run `runId` of feedback from FROM, on its stored readings. */
async function proveQueued(
  t: TestDatabase,
  sim: Simulator,
  runId: number,
  judged?: JudgedVerdicts,
): Promise<void> {
  const readings = await loadReadings(t.db, 'main', runId);
  const handle: SourceHandle = {
    name: 'main',
    baseUrl: sim.url,
    client: createApiClient({ source: simulatorSource(sim), sleep: async () => {} }),
    knowledge: readings.knowledge,
  };
  const ctx = {
    pool: t.pool,
    db: t.db,
    logger: silentLogger(),
    now: () => NOW,
    limits: { limit: 1000, maxLimit: 4000 },
    maxInvalidShare: 0.05,
    runId,
    memory: windowMemory(64 * 1024 * 1024),
  };
  await proveQueuedRun(
    ctx,
    [{ handle, resource: 'feedback', day: FROM, startDay: FROM }],
    '2026-03-12' as DayString,
    { judged },
  );
}

describe("a queued run's last proof of caps", () => {
  let t: TestDatabase;
  let sim: Simulator;
  /** The queued run whose last proof this is. */
  let queuedRun: number;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 12, from: FROM, to: TO });
    // The source, its ledger and readings, as a run leaves them.
    await runAgainst(t, sim, {
      now: NOW,
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback'] },
    });
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running' })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    queuedRun = Number(run.run_id);
  }, 60_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  /** Days settled by the queued run's workers: at `served` when no cap they knew covered it, or null. */
  async function settledByWorkers(days: Record<string, number | null>): Promise<void> {
    for (const [day, served] of Object.entries(days))
      await t.db
        .updateTable('sync_windows')
        .set({
          run_id: queuedRun,
          uncapped_served: served,
          truncated: false,
          reopened_at: null,
          proved_at: null,
        })
        .where('resource', '=', 'feedback')
        .where('day', '=', day as DayString)
        .execute();
  }

  /** `judged`: what the planner's earlier passes of this run judged by (a fresh run's when unset). */
  async function prove(judged?: JudgedVerdicts): Promise<string[]> {
    await proveQueued(t, sim, queuedRun, judged);
    const rows = await t.db
      .selectFrom('sync_windows')
      .select('day')
      .where('resource', '=', 'feedback')
      .where('reopened_at', 'is not', null)
      .orderBy('day')
      .execute();
    return rows.map((row) => String(row.day));
  }

  it('reopens a day settled at a size another worker proved a cap, and no other', async () => {
    await settledByWorkers({ '2026-03-02': 60, '2026-03-03': 59, '2026-03-04': null, '2026-03-05': 60 });
    // Nothing told yet: no cap at 60 is known, nothing is reopened.
    expect(await prove()).toEqual([]);

    // A worker proved 60 and told the run.
    await t.db
      .insertInto('queue_run_checks')
      .values({ run_id: queuedRun, source_id: 'main', resource: 'survey', caps: [60] })
      .execute();
    expect(await prove()).toEqual(['2026-03-02', '2026-03-05']);
  });

  it('a day read again knowing the cap records no uncapped size: the next proof leaves it', async () => {
    await t.db
      .updateTable('sync_windows')
      .set({ reopened_at: null, uncapped_served: null })
      .where('resource', '=', 'feedback')
      .execute();
    expect(await prove()).toEqual([]);
  });

  /** 03-04 and 03-05 settled on 03-04's own request under the stored reading, as the ledger records. */
  async function settledOnOneRequest(): Promise<void> {
    const { reading } = (await loadReadings(t.db, 'main', queuedRun)).knowledge.feedback;
    const own = requestFor('2026-03-04' as DayString, reading);
    await settledByWorkers({ '2026-03-04': null, '2026-03-05': null });
    await t.db
      .updateTable('sync_windows')
      .set({ settled_from: own.startdate, settled_to: own.enddate })
      .where('resource', '=', 'feedback')
      .where('day', 'in', ['2026-03-04', '2026-03-05'] as DayString[])
      .execute();
  }

  /** A worker's stale verdict on `resource`, told at `at`. */
  async function staleVerdict(at: Date, resource: WindowedResource = 'feedback'): Promise<void> {
    await t.db
      .insertInto('queue_run_checks')
      .values({
        run_id: queuedRun,
        source_id: 'main',
        resource,
        stale_verdicts: 1,
        last_stale_at: at,
      })
      .onConflict((oc) =>
        oc.columns(['run_id', 'source_id', 'resource']).doUpdateSet({ stale_verdicts: 1, last_stale_at: at }),
      )
      .execute();
  }

  it('where a worker found the reading stale, reopens a day whose recorded request the reading learned by then does not hold', async () => {
    await t.db
      .updateTable('sync_windows')
      .set({ reopened_at: null, uncapped_served: null, settled_from: null, settled_to: null })
      .where('resource', '=', 'feedback')
      .execute();
    const { reading } = (await loadReadings(t.db, 'main', queuedRun)).knowledge.feedback;
    // Both settled on 03-04's own request: the request 03-05 needs reaches a day further, as a
    // worker whose reading a deploy's old answers still held missed the hours a moved day adds.
    const own = requestFor('2026-03-04' as DayString, reading);
    expect(holdsDayRequest(reading)('2026-03-05' as DayString, own)).toBe(false);
    await settledOnOneRequest();
    // On a server that held still (no stale verdict), a worker's own requests stand: the stored
    // reading may know less than the worker did.
    expect(await prove()).toEqual([]);

    await staleVerdict(new Date());
    expect(await prove()).toEqual(['2026-03-05']);
  });

  it('a later pass judges the days read again since by a later verdict only: they were read knowing the one it judged by', async () => {
    const judged: JudgedVerdicts = new Map();
    await settledOnOneRequest();
    await staleVerdict(new Date(Date.now() - 60_000));
    expect(await prove(judged)).toEqual(['2026-03-05']);
    // Read again by a worker that heard the verdict and learned the reading anew: its own
    // request stands, though the planner's reading, learned from fewer items, would ask wider.
    await settledOnOneRequest();
    expect(await prove(judged)).toEqual([]);
    // A deploy after it: the days the run settled are judged again.
    await staleVerdict(new Date());
    expect(await prove(judged)).toEqual(['2026-03-05']);
  });

  it("another resource's stale verdict judges this one's days too: a deploy changes the server, not one endpoint", async () => {
    await t.db
      .updateTable('queue_run_checks')
      .set({ stale_verdicts: 0, last_stale_at: null })
      .where('run_id', '=', queuedRun)
      .execute();
    await settledOnOneRequest();
    expect(await prove()).toEqual([]);
    // Survey's reading found stale; feedback's canary may have come from the new deploy, and no
    // proof of feedback's then finds anything.
    await staleVerdict(new Date(), 'survey');
    expect(await prove()).toEqual(['2026-03-05']);
  });

  /** The reach past the evidence stored with feedback's reading, written at `at`. */
  async function storedReachAt(endReachMs: number | null, at: Date): Promise<void> {
    await t.db
      .updateTable('server_readings')
      .set({ end_reach_ms: endReachMs, updated_at: at })
      .where('source_id', '=', 'main')
      .where('resource', '=', 'feedback')
      .execute();
  }

  it("where a worker stored a reach past the evidence (the server's day moved by a zone's hours), judges the days the others settled, once a reach", async () => {
    await t.db
      .updateTable('queue_run_checks')
      .set({ stale_verdicts: 0, last_stale_at: null, caps: [] })
      .where('run_id', '=', queuedRun)
      .execute();
    const started = await t.db
      .selectFrom('sync_runs')
      .select('started_at')
      .where('run_id', '=', queuedRun)
      .executeTakeFirstOrThrow();
    // The day ends 5 h earlier than the items had shown: a request reaches a day further.
    const movedEnd = -5 * 3_600_000;
    try {
      // Stored by an earlier run: every worker of this one started from it and asked that far.
      await storedReachAt(movedEnd, new Date(started.started_at.getTime() - 3_600_000));
      await settledOnOneRequest();
      expect(await prove()).toEqual([]);

      // Stored by a worker of this run, after the others settled days on requests without it.
      await storedReachAt(null, started.started_at);
      await settledOnOneRequest();
      await storedReachAt(movedEnd, new Date());
      const judged: JudgedVerdicts = new Map();
      expect(await prove(judged)).toEqual(['2026-03-04', '2026-03-05']);
      // Read again by workers that started from that reach (03-05 still on 03-04's request,
      // which the reach does not hold): judged by it once, not again.
      await settledOnOneRequest();
      expect(await prove(judged)).toEqual([]);
    } finally {
      await storedReachAt(null, started.started_at);
    }
  });
});

/**
 * The last hours of a UTC day on a server whose day starts 2 h before it are the next server
 * day's: a deploy that turned the end bound exclusive serves the day's own request without them.
 * Within a stretch the next day's window shows them; after the stretch's last day, only the
 * planner's last proof asks the day after (reading-session.ts, daysAfterStretches).
 */
describe("a queued run's last proof of the day after a stretch", () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 12, from: FROM, to: TO, dayOffsetMinutes: 120, enddate: 'inclusive' });
    await runAgainst(t, sim, {
      now: NOW,
      request: { trigger: 'backfill', range: { from: FROM, to: TO }, resources: ['feedback'] },
    });
  }, 60_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
  });

  it("reopens a stretch's last day the day after's answer shows short, though a worker's proof proved it", async () => {
    const { rows } = await sql<{ day: string }>`
      select to_char(dt at time zone 'UTC', 'YYYY-MM-DD') as day from feedback
       where dt >= '2026-03-02' and dt < '2026-03-07' and extract(hour from dt at time zone 'UTC') >= 22
       order by dt limit 1`.execute(t.db);
    const day = rows[0]?.day as DayString;
    expect(day).toBeDefined();
    // A queued run's workers settled the stretch from 03-02 to it, and a proof of theirs passed,
    // its canary holding no item in the last two hours; the deploy had cut them from the last day.
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running' })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    const runId = Number(run.run_id);
    await t.db
      .updateTable('sync_windows')
      .set({ run_id: runId, truncated: false, reopened_at: null, proved_at: NOW })
      .where('resource', '=', 'feedback')
      .where('day', '>=', '2026-03-02' as DayString)
      .where('day', '<=', day)
      .execute();
    await sql`delete from feedback where dt >= (${day}::date + interval '22 hours') at time zone 'UTC'
                and dt < (${day}::date + 1)::timestamp at time zone 'UTC'`.execute(t.db);
    sim.resetStats();
    await proveQueued(t, sim, runId);
    const reopened = await t.db
      .selectFrom('sync_windows')
      .select(sql<string>`day::text`.as('day'))
      .where('resource', '=', 'feedback')
      .where('reopened_at', 'is not', null)
      .execute();
    expect(reopened.map((row) => row.day)).toEqual([day]);
    // One request: the day after's own (no canary to ask: the days are proved).
    expect(sim.stats().requests).toBe(1);
  });
});
