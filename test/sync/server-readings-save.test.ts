/**
 * Storing what a run learned about a server (src/sync/reading-store.ts). Several workers of one
 * queued run each learn for themselves, and an in-process run may run beside them; a later worker
 * of the run trusts what is stored. So every writer stores only over what it last read or stored:
 * one that read the old reading cannot put it back over the reading another re-learned after the
 * server changed. A writer that re-learned it replaces whatever is stored.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResourceKnowledge } from '../../src/extract/plan-steps.js';
import {
  boundItemTimes,
  boundProof,
  emptyReading,
  handedOn,
  learnFromResponse,
  mixedReadings,
  requestFor,
  type ServerReading,
} from '../../src/extract/server-reading.js';
import { silentLogger } from '../../src/log/logger.js';
import { openSlotSession } from '../../src/queue/source-slots.js';
import {
  hearStored,
  loadReadings,
  readServerReadings,
  type SourceReadings,
  type StoreOver,
  saveServerReading,
  storeReading,
  writesNothing,
} from '../../src/sync/reading-store.js';
import { addDays, daysFrom } from '../../src/time/days.js';
import { SIZES } from '../extract/midrun-search.js';
import { QuietServer, readRun, storedKnowledge, TODAY } from '../extract/reading-search.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { interceptQueries } from '../helpers/query-spy.js';
import type { ServedReading } from '../helpers/sim-readings.js';

const HOUR = 3_600_000;

/** What a writer saw: a reading stored with no reach past its evidence. */
const overReading = (over: ServerReading | null | 'relearned'): StoreOver =>
  over === null || over === 'relearned' ? over : { reading: over, reach: {} };
/** Learned before the server changed: an inclusive startdate (an item an hour after midnight). */
const OLD: ServerReading = { ...emptyReading(), headMs: HOUR, tailMs: 23 * HOUR, order: 'oldest-first' };
/** Re-learned after it changed: nothing proved yet but the order. */
const RELEARNED: ServerReading = { ...emptyReading(), order: 'newest-first', largestResponse: 12 };

/** For the calling describe block: a warehouse with one source, s1, given to `use`; dropped after it. */
function withSource(use: (t: TestDatabase) => void): void {
  let t: TestDatabase | undefined;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.insertInto('sources').values({ source_id: 's1', base_url: 'http://example.test' }).execute();
    use(t);
  });
  afterAll(() => t?.drop());
}

describe('storing a server reading over what the writer last saw', () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  const save = (reading: ServerReading, over: ServerReading | null | 'relearned') =>
    saveServerReading(t.db, 's1', 'feedback', reading, overReading(over), {
      runId: null,
      logger: silentLogger(),
    });
  const stored = async () => (await readServerReadings(t.db, 's1')).get('feedback');

  it('the first writer of a reading stores it; a second one that also saw none does not', async () => {
    expect(await save(OLD, null)).toBe(true);
    expect(await save(RELEARNED, null)).toBe(false);
    expect(await stored()).toMatchObject({ headMs: HOUR, order: 'oldest-first' });
  });

  it('of two workers that read the old reading, the one that re-learned stores first; the other cannot put the old back', async () => {
    const readByBoth = (await stored()) as ServerReading;
    expect(await save(RELEARNED, readByBoth)).toBe(true);
    // The other worker never found it stale, and learned one more thing on top of the old reading.
    const oldPlus: ServerReading = { ...OLD, tailMs: 24 * HOUR };
    expect(await save(oldPlus, readByBoth)).toBe(false);
    expect(await stored()).toMatchObject({ headMs: null, tailMs: null, order: 'newest-first' });
  });

  it('a worker goes on storing over its own', async () => {
    const more: ServerReading = { ...RELEARNED, headMs: 2 * HOUR };
    expect(await save(more, RELEARNED)).toBe(true);
    expect(await stored()).toMatchObject({ headMs: 2 * HOUR, order: 'newest-first' });
  });

  it('a writer that re-learned the reading replaces whatever is stored', async () => {
    expect(await save(OLD, 'relearned')).toBe(true);
    expect(await stored()).toMatchObject({ headMs: HOUR, order: 'oldest-first' });
  });

  it('a writer that re-learned the bounds before it asked with instants keeps what another proved of them', async () => {
    const proved: ServerReading = { ...OLD, instants: 'refused' };
    expect(await save(proved, OLD)).toBe(true);
    expect(await save({ ...RELEARNED, instants: null }, 'relearned')).toBe(true);
    expect(await stored()).toMatchObject({ order: 'newest-first', instants: 'refused' });
    // A writer that proved something else of them stores that.
    expect(await save({ ...RELEARNED, instants: 'ignored' }, 'relearned')).toBe(true);
    expect(await stored()).toMatchObject({ instants: 'ignored' });
  });

  it("over a stored reading, the source's row is not asked for (the reading's key says it is there); a source with none stores nothing", async () => {
    const statements: string[] = [];
    interceptQueries(t.pool, (args, query) => {
      const first = args[0] as string | { text?: string } | undefined;
      statements.push(typeof first === 'string' ? first : (first?.text ?? ''));
      return query(...args);
    });
    expect(await save({ ...RELEARNED, largestResponse: 40 }, 'relearned')).toBe(true);
    expect(statements.filter((s) => /from "sources"/.test(s))).toEqual([]);
    // Between begin and commit: the stored row locked, and its replacement (the largest response
    // is no change that reading_changes records).
    expect(statements.filter((s) => !/^(begin|commit)/.test(s))).toHaveLength(2);
    const unknown = await saveServerReading(t.db, 'nowhere', 'feedback', OLD, null, {
      runId: null,
      logger: silentLogger(),
    });
    expect(unknown).toBe(false);
    expect(statements.filter((s) => /from "sources"/.test(s))).toHaveLength(1);
    expect((await readServerReadings(t.db, 'nowhere')).size).toBe(0);
  });

  it('a writer refused the store of its reading still stores its verdict on instants where none is stored', async () => {
    await t.db.deleteFrom('server_readings').execute();
    expect(await save(OLD, null)).toBe(true);
    // Another first writer, which probed instants: its reading is not stored, its verdict is.
    expect(await save({ ...OLD, headMs: 2 * HOUR, instants: 'refused' }, null)).toBe(true);
    expect(await stored()).toMatchObject({ headMs: HOUR, instants: 'refused' });
    // A verdict already stored is not replaced by a writer whose reading is refused.
    expect(await save({ ...RELEARNED, instants: 'ignored' }, RELEARNED)).toBe(false);
    expect(await stored()).toMatchObject({ headMs: HOUR, instants: 'refused' });
  });

  it('of two first writers at once, the one whose insert waited for the other still stores its verdict on instants', async () => {
    await t.db.deleteFrom('server_readings').execute();
    const first = await t.pool.connect();
    try {
      await first.query('begin');
      await first.query(
        `insert into server_readings (source_id, resource, head_ms, tail_ms, start_inclusive, end_inclusive,
           server_day, item_order, cap, largest_response, limit_refused, instants)
         values ('s1', 'feedback', $1, $2, true, true, 'utc', 'oldest-first', null, 0, null, null)`,
        [HOUR, 23 * HOUR],
      );
      const second = save({ ...OLD, instants: 'refused' }, null);
      // The second writer's insert waits on the first's uncommitted row.
      await expect.poll(() => waitingInserts(), { timeout: 10_000 }).toBe(1);
      await first.query('commit');
      expect(await second).toBe(true);
    } finally {
      first.release();
    }
    expect(await stored()).toMatchObject({ headMs: HOUR, instants: 'refused' });
  });

  const waitingInserts = async () => {
    const { rows } = await t.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and query ilike 'insert into "server_readings"%'`,
    );
    return rows[0]?.n ?? 0;
  };
});

describe('a cap proved that the stored reading did not have', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.insertInto('sources').values({ source_id: 's1', base_url: 'http://example.test' }).execute();
    const day = (resource: 'feedback' | 'survey', d: string, served: number | null, truncated = false) => ({
      source_id: 's1',
      resource,
      day: d,
      status: 'done' as const,
      uncapped_served: served,
      truncated,
    });
    await t.db
      .insertInto('sync_windows')
      .values([
        // Settled whole at 60 by earlier runs that knew no cap at 60: a deploy may have cut them.
        day('feedback', '2026-03-01', 60),
        day('survey', '2026-03-02', 60),
        // Another size, a day flagged already, a day settled knowing its cap: nothing to doubt.
        day('feedback', '2026-03-03', 59),
        day('feedback', '2026-03-04', null, true),
        day('feedback', '2026-03-05', null),
      ])
      .execute();
    await save({ ...OLD, cap: 100, largestResponse: 100 }, null);
  });
  afterAll(() => t?.drop());

  const save = (reading: ServerReading, over: ServerReading | null | 'relearned') =>
    saveServerReading(t.db, 's1', 'feedback', reading, overReading(over), {
      runId: null,
      logger: silentLogger(),
    });
  const reopened = async () =>
    (
      await t.db
        .selectFrom('sync_windows')
        .select(['resource', sql<string>`day::text`.as('day')])
        .where('reopened_at', 'is not', null)
        .orderBy('day')
        .execute()
    ).map((r) => `${r.resource} ${r.day}`);

  it('reopens the days settled whole at exactly its size, of every resource of the source, once', async () => {
    expect(await reopened()).toEqual([]);
    const lowered: ServerReading = { ...OLD, cap: 60, largestResponse: 60 };
    expect(await save(lowered, { ...OLD, cap: 100, largestResponse: 100 })).toBe(true);
    expect(await reopened()).toEqual(['feedback 2026-03-01', 'survey 2026-03-02']);
    // Read again, they settle anew; storing the same cap again reopens nothing.
    await t.db.updateTable('sync_windows').set({ reopened_at: null, uncapped_served: null }).execute();
    expect(await save({ ...lowered, headMs: 2 * HOUR }, lowered)).toBe(true);
    expect(await reopened()).toEqual([]);
  });
});

describe('a reading another worker of the same queued run stored', () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  /**
   * A steady inclusive UTC server's quiet days, half learned: a day's first item at 03:47, and the
   * latest past any enddate at 04:43 of a day with one item. Bounds held to by earlier runs' answers
   * could not be that close (a server's items run from its start bound to its end, a day apart);
   * evidence a run is still gathering can.
   */
  const THIN: ServerReading = { ...emptyReading(), headMs: 3.8 * HOUR, tailMs: 4.7 * HOUR };
  /** Another answer, of the same days: nothing new about the bounds. */
  const answerAgain = (reading: ServerReading) => {
    learnFromResponse(reading, { startdate: '2026-11-29', enddate: '2026-12-01' }, [
      { dt: '2026-11-30T00:15:57.328Z' },
      { dt: '2026-12-01T04:43:38.674Z' },
    ]);
    return mixedReadings(reading);
  };

  it("is the run's own learning so far, not two readings at once; one stored before the run started is held to", async () => {
    const earlier = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'ok' })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    await saveServerReading(t.db, 's1', 'recordings', THIN, null, { runId: null, logger: silentLogger() });
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running', started_at: sql<Date>`now() + interval '1 second'` })
      .returning('run_id')
      .executeTakeFirstOrThrow();

    const stored = async (runId: number | undefined) =>
      (await readServerReadings(t.db, 's1', runId)).get('recordings') as ServerReading;
    // A worker of the run that stored it, whose first window hears it: learning goes on.
    expect(answerAgain(await stored(earlier.run_id))).toBe(false);
    // A later run, queued or in process, starts from it as earlier runs' answers held to it.
    expect(answerAgain(await stored(run.run_id))).toBe(true);
    expect(answerAgain(await stored(undefined))).toBe(true);
  });
});

/** A run from nothing over nine days of `server`: what it learned. */
function firstRun(server: QuietServer): ResourceKnowledge {
  const run = storedKnowledge(emptyReading());
  readRun(server, daysFrom(addDays(TODAY, -30), addDays(TODAY, -22)), run);
  return run;
}

/** `reading` stored as the first of source s1's feedback, and read back as the next run reads it. */
async function storedAndLoaded(t: TestDatabase, reading: ServerReading): Promise<ServerReading> {
  expect(
    await saveServerReading(t.db, 's1', 'feedback', reading, null, { runId: null, logger: silentLogger() }),
  ).toBe(true);
  return (await readServerReadings(t.db, 's1')).get('feedback') as ServerReading;
}

describe("a reading whose requests reach past its evidence after a zone's move", () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  it('is stored with that reach: the next reader asks the same request for a day as the run did', async () => {
    // test/extract/handed-on.test.ts: a server capped at 30 moved its day 5 h behind UTC between runs.
    const before: ServedReading = {
      startdate: 'exclusive',
      enddate: 'exclusive',
      order: 'oldest-first',
      cap: 30,
      maxLimit: 40,
      dayOffsetMinutes: 0,
    };
    const server = new QuietServer(43 + 102, addDays(TODAY, -40), addDays(TODAY, 5), before, SIZES.normal);
    const first = firstRun(server);
    server.reading = { ...before, order: 'random', dayOffsetMinutes: -300 };
    const run = storedKnowledge(first.reading);
    readRun(server, daysFrom(addDays(TODAY, -20), addDays(TODAY, -5)), run);
    const next = await storedAndLoaded(t, run.reading);
    const day = addDays(TODAY, -2);
    expect(requestFor(day, next)).toEqual(requestFor(day, run.reading));
    // The evidence alone, as it was stored before, asks a day less far back.
    expect(requestFor(day, { ...run.reading })).not.toEqual(requestFor(day, next));
  });
});

describe('the items the bounds of a stored reading rest on', () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  it("are stored with it: the next reader can ask the end's own item again, as the run that learned it could", async () => {
    // A server listing newest first: a cut answer keeps its end, and the end's item, asked again,
    // shows whether the server still serves that far (boundProof).
    const served: ServedReading = {
      startdate: 'inclusive',
      enddate: 'exclusive',
      order: 'newest-first',
      cap: 1000,
      maxLimit: null,
      dayOffsetMinutes: 0,
    };
    const run = firstRun(
      new QuietServer(20261207, addDays(TODAY, -40), addDays(TODAY, 5), served, SIZES.normal),
    );
    const proof = boundProof(run.reading);
    expect(proof?.side).toBe('end');
    const next = await storedAndLoaded(t, run.reading);
    expect(boundItemTimes(next)).toEqual(boundItemTimes(run.reading));
    expect(boundProof(next)).toEqual(proof);
    // Without them, as before migration 0055, a stored reading had nothing to ask.
    const row = await t.db
      .selectFrom('server_readings')
      .select(['head_item_ms', 'tail_item_ms'])
      .where('source_id', '=', 's1')
      .executeTakeFirstOrThrow();
    expect(row.tail_item_ms).toBe(proof?.time);
    await t.db.updateTable('server_readings').set({ head_item_ms: null, tail_item_ms: null }).execute();
    const unrested = (await readServerReadings(t.db, 's1')).get('feedback') as ServerReading;
    expect(boundProof(unrested)).toBeUndefined();
  });
});

describe('a reach an earlier run stored, which one worker of a queued run lets go', () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  /** A steady inclusive UTC server's recordings, as runs learned them: 00:02 to 23:50 of a day. */
  const LEARNED: ServerReading = {
    ...emptyReading(),
    headMs: 146_519,
    tailMs: 85_801_106,
    order: 'oldest-first',
  };
  /** The end an earlier run's requests kept after it took a thin stored end's items for a move: 22:45. */
  const END_REACH = 81_900_000;
  const DAYS = { startdate: '2026-11-29', enddate: '2026-11-30' };
  const answer = (readings: SourceReadings, lastItem: string) => {
    const knowledge = readings.knowledge.recordings;
    knowledge.reading = learnFromResponse(knowledge.reading, DAYS, [
      { dt: '2026-11-29T00:05:00.000Z' },
      { dt: `2026-11-30T${lastItem}Z` },
    ]);
    knowledge.responses = (knowledge.responses ?? 0) + 1;
  };
  const stored = () =>
    t.db
      .selectFrom('server_readings')
      .select(['tail_ms', 'end_reach_ms'])
      .where('resource', '=', 'recordings')
      .executeTakeFirstOrThrow();

  it("stays gone: a worker whose own answers did not pass it does not store it again over the other's", async () => {
    await saveServerReading(t.db, 's1', 'recordings', LEARNED, null, { runId: null, logger: silentLogger() });
    await t.db.updateTable('server_readings').set({ end_reach_ms: END_REACH }).execute();
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running', started_at: sql<Date>`now() + interval '1 second'` })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    const writer = { runId: run.run_id, logger: silentLogger() };
    // Two workers start on the source before either stores: both ask each day with the next.
    const [a, b] = [await loadReadings(t.db, 's1', run.run_id), await loadReadings(t.db, 's1', run.run_id)];
    // One's answers show the server serving to 23:45 of a request's last day: the reach goes.
    answer(a, '23:45:00.000');
    expect(await storeReading(t.db, a, 'recordings', writer)).toBe(true);
    expect(await stored()).toEqual({ tail_ms: LEARNED.tailMs, end_reach_ms: null });
    // The other's last item of a day was at 20:00: nothing of its own says the reach may go.
    answer(b, '20:00:00.000');
    expect(handedOn(b.knowledge.recordings.reading)).toEqual({ endMs: END_REACH });
    await storeReading(t.db, b, 'recordings', writer);
    expect(await stored()).toEqual({ tail_ms: LEARNED.tailMs, end_reach_ms: null });
  });
});

/** Feedback as earlier runs stored it: items from 01:00 to 23:00, three in the largest answer. */
const STORED: ServerReading = {
  ...emptyReading(),
  headMs: HOUR,
  tailMs: 23 * HOUR,
  order: 'oldest-first',
  largestResponse: 3,
};

/** A writer's answer of 2026-11-29's feedback with items at these hours, none outside STORED's bounds. */
function answer(readings: SourceReadings, hours: number[]): void {
  const knowledge = readings.knowledge.feedback;
  const items = hours.map((h) => ({ dt: `2026-11-29T${String(h).padStart(2, '0')}:00:00.000Z` }));
  knowledge.reading = learnFromResponse(
    knowledge.reading,
    { startdate: '2026-11-29', enddate: '2026-11-29' },
    items,
  );
  knowledge.responses = (knowledge.responses ?? 0) + 1;
}

describe("a run's workers learning the largest answer again from none", () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  const row = () =>
    t.db
      .selectFrom('server_readings')
      .select(['largest_response', 'updated_at'])
      .where('resource', '=', 'feedback')
      .executeTakeFirstOrThrow();

  it('send nothing where their reading comes back to the row as stored; a larger answer is stored', async () => {
    await saveServerReading(t.db, 's1', 'feedback', STORED, null, { runId: null, logger: silentLogger() });
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running', started_at: sql<Date>`now() + interval '1 second'` })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    const writer = { runId: run.run_id, logger: silentLogger() };
    const [a, b] = [await loadReadings(t.db, 's1', run.run_id), await loadReadings(t.db, 's1', run.run_id)];
    const before = await row();
    const statements: unknown[] = [];
    interceptQueries(t.pool, (args, query) => {
      statements.push(args[0]);
      return query(...args);
    });
    // Each worker's first answer of three changes its reading (it learned the largest from none),
    // and leaves the row as it is: no transaction, no statement.
    answer(a, [1, 12, 23]);
    answer(b, [1, 12, 23]);
    expect(await storeReading(t.db, a, 'feedback', writer)).toBe(false);
    expect(await storeReading(t.db, b, 'feedback', writer)).toBe(false);
    expect(statements).toEqual([]);
    expect(await row()).toEqual(before);
    // A larger answer than the row holds is news: stored.
    answer(b, [1, 6, 12, 23]);
    expect(await storeReading(t.db, b, 'feedback', writer)).toBe(true);
    expect((await row()).largest_response).toBe(4);
    // The other worker comes to four as well: what it last saw of the row held three, so it
    // stores, and the row is as the first left it.
    answer(a, [1, 6, 12, 23]);
    await storeReading(t.db, a, 'feedback', writer);
    expect((await row()).largest_response).toBe(4);
  });
});

describe("a queued window's slot release, which reads the source's stored readings back", () => {
  let t: TestDatabase;
  withSource((made) => {
    t = made;
  });

  const largest = async () =>
    (
      await t.db
        .selectFrom('server_readings')
        .select('largest_response')
        .where('resource', '=', 'feedback')
        .executeTakeFirstOrThrow()
    ).largest_response;

  it("lets a worker store only news to the row as it is now; a smaller answer than this run's largest is none", async () => {
    await saveServerReading(t.db, 's1', 'feedback', STORED, null, { runId: null, logger: silentLogger() });
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running' })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    await t.db.insertInto('queue_slots').values({ source_id: 's1', slot: 1 }).execute();
    const writer = { runId: run.run_id, logger: silentLogger() };
    const [a, b] = [await loadReadings(t.db, 's1', run.run_id), await loadReadings(t.db, 's1', run.run_id)];
    // Worker a stores a larger answer than earlier runs had.
    answer(a, [1, 6, 12, 23]);
    expect(await storeReading(t.db, a, 'feedback', writer)).toBe(true);
    // Worker b last read the row before that; its slot's release reads it as it is now.
    const session = await openSlotSession(t.url, t.schema);
    try {
      expect(await session.tryClaimAny(['s1'], [run.run_id])).toMatchObject({ source: 's1' });
      const released = await session.release({ runId: run.run_id, source: 's1' });
      expect(released?.lastStale).toBe(0);
      expect(released?.readings).toEqual([
        expect.objectContaining({ resource: 'feedback', head_ms: HOUR, largest_response: 4, this_run: true }),
      ]);
      hearStored(b, released?.readings ?? []);
    } finally {
      await session.close();
    }
    // Its answer of three, then of four: neither is news to a row this run wrote at four.
    answer(b, [1, 12, 23]);
    expect(await storeReading(t.db, b, 'feedback', writer)).toBe(false);
    answer(b, [1, 6, 12, 23]);
    expect(await storeReading(t.db, b, 'feedback', writer)).toBe(false);
    expect(await largest()).toBe(4);
    // A row an earlier run wrote is another matter: a run's own answers replace its largest.
    expect(
      writesNothing(
        { reading: { ...STORED, largestResponse: 9 }, reach: {}, thisRun: false },
        {
          reading: { ...STORED, largestResponse: 4 },
          reach: {},
        },
      ),
    ).toBe(false);
  });
});
