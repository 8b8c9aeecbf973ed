import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import { type Simulator, type SimulatorPatch, startSimulator } from '../../src/simulator/server.js';
import { addDays } from '../../src/time/days.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { jobTally, sourceKeys, startCluster } from '../helpers/queue-cluster.js';
import { changedPairs, type SimReading } from '../helpers/sim-readings.js';
import { runAgainst } from '../helpers/sync-harness.js';

/**
 * SPEC-GAPS: "one server over time may pick differently". A source's reading is learned by one
 * run and stored; a later queued backfill meets the server playing another one. Its workers start
 * from the stored reading, one of them re-checks it for the run (queue_run_checks), the others
 * take what it stored. Whatever the change, the warehouse must hold what the server serves: a
 * request narrowed under the old reading (say (D, D) on a server whose bounds became exclusive)
 * must never load a day short and call it done.
 *
 * One simulator per case, one source per simulator, all in one queued run: three `worker`
 * processes of the dev CLI, the third started once the run's checks are recorded, so it works
 * only from readings other workers stored.
 */

/**
 * A fixed calendar, in the past: the simulator draws each day's items from its date, so days
 * counted back from the real today would be other data every day, and a failure seen one day
 * could not be replayed the next. Every day here is closed, as a backfill's days are.
 */
const TODAY = '2026-11-20';
const FROM = addDays(TODAY, -14);
/** The first backfill, in process, under the old reading. */
const LEARNED_TO = addDays(TODAY, -10);
/** The queued backfill, under the new reading: days nothing has loaded yet, so a short day shows. */
const QUEUED_FROM = addDays(LEARNED_TO, 1);
const TO = addDays(TODAY, -1);
const QUEUED_DAYS = 9;
const RESOURCES = 3;
/** Process tests: tsx starts each CLI in 1-3 s, several at once on 2 shared CPUs. */
const PROCESS_TEST_MS = 120_000;

const UTC_INCLUSIVE: SimReading = {
  startdate: 'inclusive',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 1000,
  maxLimit: null,
  dayOffsetMinutes: 0,
};
const EXCLUSIVE: SimReading = { ...UTC_INCLUSIVE, startdate: 'exclusive', enddate: 'exclusive' };

/**
 * Few items a day (at most ~13 feedback, the busy day 12), so every cap and maximum below holds
 * any one server day whole: the truth is readable in full, and anything missing is a loss.
 */
const VOLUME = { feedbackPerDay: 3, surveyPerDay: 2, recordingsPerDay: 2, busyDayFeedback: 12 };

/**
 * Seeded: the same pairs every run, as the completeness trials do with their servers. The seed's
 * third pair (inclusive start and exclusive end on UTC days, then exclusive start and inclusive
 * end 5 h behind, a cap of 30) is the hard one: on these quiet days (0-3 items) a run's check can
 * fall on a day with no item where the readings differ. Quiet mode (src/extract/quiet-mode.ts)
 * asks such a run's days the widest request, which holds a day under any reading.
 */
const RANDOM_PAIRS = changedPairs(3, 14_2027);

const CASES: { name: string; before: SimReading; after: SimReading }[] = [
  {
    name: 'bounds inclusive, now exclusive',
    before: UTC_INCLUSIVE,
    after: EXCLUSIVE,
  },
  { name: 'bounds exclusive, now inclusive', before: EXCLUSIVE, after: UTC_INCLUSIVE },
  {
    name: 'UTC days, now UTC-5 days',
    before: UTC_INCLUSIVE,
    after: { ...UTC_INCLUSIVE, dayOffsetMinutes: -300 },
  },
  {
    name: 'oldest first, now newest first',
    before: UTC_INCLUSIVE,
    after: { ...UTC_INCLUSIVE, order: 'newest-first' },
  },
  {
    name: 'no maximum limit, now 400 above 20',
    before: UTC_INCLUSIVE,
    after: { ...UTC_INCLUSIVE, maxLimit: 20 },
  },
  {
    name: 'no cap, now a silent cap of 15',
    before: UTC_INCLUSIVE,
    after: { ...UTC_INCLUSIVE, cap: 15 },
  },
  ...RANDOM_PAIRS.map(([before, after], i) => ({
    name: `random pair ${i + 1}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`,
    before,
    after,
  })),
];

const patchOf = (r: SimReading): SimulatorPatch => ({ ...r });

describe('a queued backfill against servers whose reading changed since it was stored', () => {
  const sims: Simulator[] = [];
  let t: TestDatabase;
  const keys = sourceKeys(CASES.length);
  const names = keys.map((_, i) => `s${i + 1}`);
  let backfill: CliResult;
  let workers: CliResult[];
  let lateWorkerPid = 0;
  /** The run's checks recorded when the late worker started: it trusts those, and checks the rest. */
  let recordedAtLateStart: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    for (const [i, c] of CASES.entries())
      sims.push(
        await startSimulator({
          seed: 140 + i,
          from: FROM,
          to: TODAY,
          apiKeys: [keys[i] as string],
          volume: VOLUME,
          ...patchOf(c.before),
        }),
      );
    // The old reading learned and stored, by an ordinary in-process backfill.
    const sources: SourceConfig[] = sims.map((sim, i) => ({
      name: names[i] as string,
      baseUrl: sim.url,
      apiKey: keys[i] as string,
    }));
    const learned = await runAgainst(t, sims[0] as Simulator, {
      now: new Date(),
      sources,
      request: { trigger: 'backfill', range: { from: FROM, to: LEARNED_TO } },
    });
    expect(learned.status).toBe('ok');

    // The servers change their reading, and answer slowly enough for windows to overlap.
    for (const [i, c] of CASES.entries()) sims[i]?.setOptions({ ...patchOf(c.after), latencyMs: 80 });
    const cluster = startCluster(t, sims[0] as Simulator, {
      sources: CASES.length,
      workers: 2,
      urls: sims.map((s) => s.url),
      env: { INSIGHTS_WORKER_CONCURRENCY: '3', LOG_LEVEL: 'info' },
    });
    try {
      const planner = startCli(['backfill', '--queue', '--from', QUEUED_FROM, '--to', TO], cluster.env);
      // A worker that joins once the first third of the windows is done, and some of the run's
      // checks are recorded: it trusts the readings stored with those.
      await vi.waitFor(
        async () => {
          const { byState } = await jobTally(t);
          expect(byState.completed ?? 0).toBeGreaterThanOrEqual((CASES.length * RESOURCES * QUEUED_DAYS) / 3);
          const checks = await t.db
            .selectFrom('queue_run_checks')
            .select('resource')
            .where('checked', '=', true)
            .execute();
          expect(checks.length).toBeGreaterThan(0);
        },
        { timeout: 60_000, interval: 50 },
      );
      recordedAtLateStart = (
        await t.db
          .selectFrom('queue_run_checks')
          .select(['source_id', 'resource'])
          .where('checked', '=', true)
          .execute()
      ).map((c) => `${c.source_id}/${c.resource}`);
      lateWorkerPid = cluster.startWorker().child.pid ?? 0;
      backfill = await planner.done;
    } finally {
      workers = await cluster.stop();
    }
  }, PROCESS_TEST_MS);

  afterAll(async () => {
    for (const sim of sims) await sim.stop();
    await t?.drop();
  });

  it('the run ends ok, every window done once, three workers stopping cleanly', async () => {
    expect(backfill.stderr).not.toMatch(/"level":"(error|fatal)"/);
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(backfill.stdout).toMatch(/run \d+: ok in/);
    expect(workers.map((w) => w.code)).toEqual([0, 0, 0]);
    const tally = await jobTally(t);
    const planned = CASES.length * RESOURCES * QUEUED_DAYS;
    expect(Object.keys(tally.byState)).toEqual(['completed']);
    // A day reopened is queued again and read once more: by a worker (a later answer showed it
    // short, a proof failed), or by the planner's last proof, which judges every day settled under
    // the stored reading by the one the run learned since. Learned from these quiet days' few
    // items, that reading holds only wide requests, so most of a changed server's days settled
    // before its check may be read again (5 to 23 of the 243 in runs so far). A later pass judges
    // the days read again only by a later verdict, and so reads none of them a third time but for
    // a verdict of its own (when every pass judged every day, some were read four times, a pass each).
    expect(tally.byState.completed).toBeGreaterThanOrEqual(planned);
    expect(tally.byState.completed).toBeLessThanOrEqual(2 * planned);
    expect(tally.jobsOfBusiestWindow).toBeLessThanOrEqual(3);
    expect(tally.completedTwice).toEqual([]);
    const late = await t.db
      .selectFrom('queue_workers')
      .select('windows_done')
      .where('pid', '=', lateWorkerPid)
      .executeTakeFirstOrThrow();
    // Otherwise this test says nothing about a worker working from stored readings alone.
    expect(late.windows_done).toBeGreaterThan(0);
  });

  it("the run's check of a stored reading is recorded once; a worker settles it at most once per source and resource, and one that joined after it was recorded, never", async () => {
    const recorded = await t.db
      .selectFrom('queue_run_checks')
      .select(['run_id', 'source_id', 'resource'])
      .where('checked', '=', true)
      .execute();
    // A check that could not settle the reading (no item of its day, a cut answer) is made again on
    // a later day; one that never settled it in the run is not recorded.
    expect(recorded.length).toBeGreaterThan(0);
    expect(recorded.length).toBeLessThanOrEqual(CASES.length * RESOURCES);
    expect(new Set(recorded.map((r) => r.run_id)).size).toBe(1);
    // Every worker logs the checks it made itself (the two that started with the run may both
    // have begun a source before either had recorded its check: each then checks once), and so
    // does the planner, whose last proof records one where it found a reading stale that no
    // worker had checked (a stale verdict answers the check).
    const checksOf = (stderr: string) =>
      stderr
        .split('\n')
        .filter((line) => line.includes('checked the stored server reading for the run'))
        .map((line) => {
          const entry = JSON.parse(line) as { source: string; resource: string };
          return `${entry.source}/${entry.resource}`;
        });
    const checksBy = workers.map((w) => checksOf(w.stderr));
    const byPlanner = checksOf(backfill.stderr);
    for (const made of [...checksBy, byPlanner]) expect(made.length).toBe(new Set(made).size);
    const [first = [], second = [], late = []] = checksBy;
    for (const key of late) expect(recordedAtLateStart).not.toContain(key);
    const recordedKeys = recorded.map((r) => `${r.source_id}/${r.resource}`);
    expect(new Set([...first, ...second, ...late, ...byPlanner])).toEqual(new Set(recordedKeys));
  });

  it.each(CASES.map((c, i) => ({ ...c, source: names[i] as string })))(
    '$name: the stored reading is no longer the old one where they differ',
    async ({ before, after, source }) => {
      const stored = await t.db
        .selectFrom('server_readings')
        .selectAll()
        .where('source_id', '=', source)
        .execute();
      expect(stored).toHaveLength(RESOURCES);
      for (const r of stored) {
        // An exclusive bound is never proved inclusive: a stale "inclusive" would narrow every request.
        if (after.startdate === 'exclusive') expect(r.start_inclusive, r.resource).toBe(false);
        if (after.enddate === 'exclusive') expect(r.end_inclusive, r.resource).toBe(false);
        // A new order is learned, or the old and new seen together make "unordered": never the old one alone.
        if (after.order === 'random') expect(r.item_order, r.resource).toBe('unordered');
        else if (after.order !== before.order)
          expect([after.order, 'unordered'], r.resource).toContain(r.item_order);
        if (after.maxLimit !== null && after.maxLimit !== before.maxLimit)
          expect(r.limit_refused, r.resource).toBeGreaterThan(after.maxLimit);
      }
    },
  );

  // Which bounds a stored reading has proved again depends on which windows its writer ran (the
  // first worker to store over the old reading keeps it, src/sync/reading-store.ts): a reading
  // that proved less only asks wider, and the next run learns again. What must hold is safety.
  it('a fixed case on UTC days: UTC-5 days are no longer taken for UTC', async () => {
    const of = async (name: string) => {
      const source = names[CASES.findIndex((c) => c.name === name)] as string;
      return t.db.selectFrom('server_readings').selectAll().where('source_id', '=', source).execute();
    };
    for (const r of await of('UTC days, now UTC-5 days')) expect(r.server_day, r.resource).not.toBe('utc');
  });

  it.each(CASES.map((c, i) => ({ ...c, source: names[i] as string, sim: i })))(
    '$name: the warehouse equals the truth over both backfills, nothing flagged, nothing extra',
    async ({ source, sim }) => {
      const compared = await compareWithTruth(t, source, (sims[sim] as Simulator).truth(), {
        from: FROM,
        to: TO,
      });
      for (const [resource, r] of Object.entries(compared)) {
        expect({ resource, missing: r.expected - r.stored, days: r.trulyTruncated }).toEqual({
          resource,
          missing: 0,
          days: [],
        });
        expect(r.extra, resource).toBe(0);
        expect(r.misplaced, resource).toBe(0);
        expect(r.flagged, resource).toEqual([]);
      }
      // Each window loaded its whole day itself: a short one must not hide behind the items its
      // neighbours' wider requests happened to store.
      const truth = (sims[sim] as Simulator).truth();
      const windows = await t.db
        .selectFrom('sync_windows')
        .select(['resource', 'day', 'status', 'item_count'])
        .where('source_id', '=', source)
        .where('day', '>=', QUEUED_FROM)
        .orderBy('resource')
        .orderBy('day')
        .execute();
      expect(windows).toHaveLength(RESOURCES * QUEUED_DAYS);
      expect(windows.map((w) => `${w.resource} ${w.day}: ${w.status}, ${w.item_count} items`)).toEqual(
        windows.map(
          (w) =>
            `${w.resource} ${w.day}: done, ${truth[w.resource].filter((item) => item.dt.startsWith(w.day)).length} items`,
        ),
      );
    },
  );
});
