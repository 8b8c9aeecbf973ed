import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES, type WindowedResource } from '../../src/schemas/resources.js';
import { type GroundTruth, type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays } from '../../src/time/days.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import { type Completeness, compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys, startCluster } from '../helpers/queue-cluster.js';
import { type RoutedRequest, startReadingBalancer } from '../helpers/reading-balancer.js';
import {
  describeCase,
  maximumFlapCases,
  patchOf,
  SWITCH_KINDS,
  type SwitchCase,
  servedAtMost,
  switchCases,
  TODAY,
} from './queue-switch-cases.js';
import { FOUND_CASES } from './queue-switch-found.js';

/**
 * SPEC-GAPS, "a reading that changes", searched on the paths a user runs: a real `backfill` over
 * HTTP, queued to two `worker` processes or direct, against a server deployed while it reads. The
 * server is two simulators on one seed (the same data), each playing one reading, behind a load
 * balancer (test/helpers/reading-balancer.ts) that sends window requests to the old one until a
 * random request, then to the new one; in half the cases both answer at random for a stretch
 * first (a rolling deploy). Every gap a deploy can change is played: each bound's inclusivity,
 * order, cap, day zone, instants honoured/ignored/refused, a maximum limit, several at once.
 *
 * Compared with the simulators' ground truth: no day recorded complete (done, not flagged
 * truncated) lacks an item, so no flag is lost; nothing extra or misplaced is stored. Then again
 * after the night after: a `sync` against the new deploy alone (syncAfterDeploy), which reads again
 * what the run reopened or flagged and can now be read further, and must clear no flag wrongly.
 *
 * INSIGHTS_TRIAL_CASES=N plays N cases (default 10, about 70 s on 2 shared cores);
 * INSIGHTS_TRIAL_SEED another seed; INSIGHTS_TRIAL_ONLY=i case i alone (its logs at debug with
 * INSIGHTS_TRIAL_LOG_LEVEL=debug); a failing case's logs, routed requests and stored readings are
 * written to $TMPDIR/queue-switch-search/ (every case's with INSIGHTS_TRIAL_KEEP=1).
 * INSIGHTS_TRIAL_BACKFILL=1 backfills each case's range after the night too, and counts the days
 * lacking items it reads whole. INSIGHTS_TRIAL_FOUND=1 plays instead the cases the wide
 * runs found settling days short (queue-switch-found.ts); the default set plays after its own
 * those fixed since (case 11 of the default seed was one of them: the generated
 * set stops at 10, its first 10 having passed in every run), then a sample behind a cache keyed
 * on the whole address (CACHED_SAMPLE); INSIGHTS_TRIAL_CACHED=1 plays every case so, and
 * INSIGHTS_TRIAL_PATH=direct (or queue) every case on that path. Last, two rolling deploys of a
 * maximum limit on busy days (maximumFlapCases), which must also exit 0 with no window failed;
 * INSIGHTS_TRIAL_FLAP=N plays N of them alone.
 */

const DEFAULT_CASES = 10;
const CASES = Number(process.env.INSIGHTS_TRIAL_CASES ?? DEFAULT_CASES);
const SEED = Number(process.env.INSIGHTS_TRIAL_SEED ?? 2026_1129);
const FOUND = process.env.INSIGHTS_TRIAL_FOUND === '1';
const ONLY =
  process.env.INSIGHTS_TRIAL_ONLY === undefined ? undefined : Number(process.env.INSIGHTS_TRIAL_ONLY);
const LOG_LEVEL = process.env.INSIGHTS_TRIAL_LOG_LEVEL ?? 'warn';
/** Every case's evidence kept, not only a failing one's (INSIGHTS_TRIAL_KEEP=1). */
const KEEP = process.env.INSIGHTS_TRIAL_KEEP === '1';
/** After the night, a backfill of the range too, counting what it reads whole (readByBackfill). */
const BACKFILL_AFTER = process.env.INSIGHTS_TRIAL_BACKFILL === '1';
/** Every case behind a cache keyed on the whole address (reading-balancer.ts, `cache`). */
const CACHED = process.env.INSIGHTS_TRIAL_CACHED === '1';
/** Every case on this path (`direct` or `queue`), whichever its own. */
const PATH = process.env.INSIGHTS_TRIAL_PATH as SwitchCase['path'] | undefined;
if (PATH !== undefined && PATH !== 'direct' && PATH !== 'queue')
  throw new Error(`INSIGHTS_TRIAL_PATH is direct or queue, not ${PATH}`);
const PROCESS_TEST_MS = 120_000;
/** About 20 to 190 items a day of each resource under a cap of 100: about one day in seven above it. */
const VOLUME = { feedbackPerDay: 55, surveyPerDay: 45, recordingsPerDay: 35, busyDayFeedback: 95 };
/** Enough that requests of two workers overlap at the deploy; little enough that a case takes seconds. */
const LATENCY_MS = 15;
const LOG_DIR = join(tmpdir(), 'queue-switch-search');

interface WindowRow {
  resource: WindowedResource;
  day: string;
  status: string;
  truncated: boolean;
  reopened: boolean;
}

/** What one case left in the warehouse, against the truth. */
interface Verdict {
  found: Record<WindowedResource, Completeness>;
  /** `resource day: stored of truth`, for days recorded complete that lack items. */
  short: string[];
  /** Of those, days above what one answer serves: a truncated flag lost. */
  lostFlags: string[];
  flagged: number;
  /** Days lacking items not recorded complete: failed, open or reopened (left for the next run). */
  unsettled: string[];
  /** Windows the ledger holds failed. */
  failedWindows: number;
  /** The truth's items per day, per resource, over the case's days and two either side. */
  truthDays: string[];
}

function truthCounts(truth: GroundTruth, resource: WindowedResource): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of truth[resource] as unknown as { dt: string }[]) {
    const day = item.dt.slice(0, 10);
    counts.set(day, (counts.get(day) ?? 0) + 1);
  }
  return counts;
}

async function judge(t: TestDatabase, truth: GroundTruth, c: SwitchCase): Promise<Verdict> {
  const found = await compareWithTruth(t, 's1', truth, { from: c.from, to: c.to });
  const rows = (await t.db
    .selectFrom('sync_windows')
    .select(['resource', 'day', 'status', 'truncated', 'reopened_at'])
    .where('source_id', '=', 's1')
    .execute()) as unknown as (Omit<WindowRow, 'reopened'> & { reopened_at: Date | null })[];
  const windows = new Map<string, WindowRow>(
    rows.map((r) => [`${r.resource} ${r.day}`, { ...r, reopened: r.reopened_at !== null }]),
  );
  const perAnswer = Math.min(servedAtMost(c.before), servedAtMost(c.after));
  const verdict: Verdict = {
    found,
    short: [],
    lostFlags: [],
    flagged: 0,
    unsettled: [],
    failedWindows: rows.filter((r) => r.status === 'failed').length,
    truthDays: [],
  };
  for (const resource of WINDOWED_RESOURCES) {
    const counts = truthCounts(truth, resource);
    const near = [...counts].filter(([day]) => day >= addDays(c.from, -2) && day <= addDays(c.to, 2));
    verdict.truthDays.push(
      `${resource}: ${near
        .sort()
        .map(([day, n]) => `${day.slice(5)} ${n}`)
        .join(', ')}`,
    );
    verdict.flagged += found[resource].flagged.length;
    for (const day of found[resource].trulyTruncated) {
      const w = windows.get(`${resource} ${day}`);
      const name = `${resource} ${day}`;
      if (w === undefined || w.status !== 'done' || w.reopened) {
        verdict.unsettled.push(
          `${name} (${w === undefined ? 'no window' : w.reopened ? 'reopened' : w.status})`,
        );
        continue;
      }
      if (w.truncated) continue;
      const held = await storedOn(t, resource, day);
      const label = `${name}: ${held} of ${counts.get(day) ?? 0}`;
      verdict.short.push(label);
      if ((counts.get(day) ?? 0) > perAnswer) verdict.lostFlags.push(label);
    }
  }
  return verdict;
}

const TABLES = { feedback: 'feedback', survey: 'survey_answers', recordings: 'recordings' } as const;

async function storedOn(t: TestDatabase, resource: WindowedResource, day: string): Promise<number> {
  const rows = await t.db
    .selectFrom(TABLES[resource])
    .select(['raw'])
    .where('source_id', '=', 's1')
    .execute();
  return rows.filter((r) => String((r.raw as { dt: string }).dt).startsWith(day)).length;
}

interface Played {
  run: CliResult;
  workers: CliResult[];
  routed: readonly RoutedRequest[];
  verdict: Verdict;
  /** The server_readings rows the run left: what it believed of each gap, per resource. */
  readings: unknown[];
  /** The nightly `sync` after the deploy, against the new deploy alone, and the warehouse then. */
  nextNight: {
    run: CliResult;
    verdict: Verdict;
    /** With INSIGHTS_TRIAL_BACKFILL=1, what a backfill after the night read whole (readByBackfill). */
    readByBackfill?: { lacking: number; readWhole: string[] };
  };
}

async function playCase(c: SwitchCase): Promise<Played> {
  const t = await createTestDatabase();
  const sims: Simulator[] = [];
  try {
    for (const reading of [c.before, c.after])
      sims.push(
        await startSimulator({
          seed: c.seed,
          from: addDays(c.from, -3),
          to: TODAY,
          apiKeys: sourceKeys(1),
          latencyMs: LATENCY_MS,
          volume: { ...VOLUME, ...c.volume },
          ...patchOf(reading),
        }),
      );
    const [old, deployed] = sims as [Simulator, Simulator];
    const balancer = await startReadingBalancer({ old: old.url, new: deployed.url }, c.plan, {
      cache: CACHED || c.cached === true,
    });
    try {
      const cluster = startCluster(t, old, {
        sources: 1,
        workers: c.path === 'queue' ? 2 : 0,
        urls: [balancer.url],
        env: { INSIGHTS_WORKER_CONCURRENCY: '2', LOG_LEVEL },
      });
      const args = ['backfill', ...(c.path === 'queue' ? ['--queue'] : []), '--from', c.from, '--to', c.to];
      let run: CliResult;
      let workers: CliResult[];
      try {
        run = await startCli(args, cluster.env).done;
      } finally {
        workers = await cluster.stop();
      }
      const verdict = await judge(t, old.truth(), c);
      const readings = await t.db.selectFrom('server_readings').selectAll().execute();
      const nextNight = await syncAfterDeploy(t, deployed, c);
      return { run, workers, routed: balancer.routed(), verdict, readings, nextNight };
    } finally {
      await balancer.close();
    }
  } finally {
    for (const sim of sims) await sim.stop();
    await t.drop();
  }
}

/**
 * The night after: a plain `sync` against the new deploy alone (the deploy done), which reads again
 * the days the run reopened and the flagged days it can now read further. It must not settle a day
 * short or clear a flag on a day still lacking items either.
 */
async function syncAfterDeploy(
  t: TestDatabase,
  deployed: Simulator,
  c: SwitchCase,
): Promise<Played['nextNight']> {
  const cluster = startCluster(t, deployed, { sources: 1, workers: 0, env: { LOG_LEVEL } });
  try {
    const run = await startCli(['sync'], cluster.env).done;
    const verdict = await judge(t, deployed.truth(), c);
    if (!BACKFILL_AFTER) return { run, verdict };
    return { run, verdict, readByBackfill: await readByBackfill(t, deployed, c, cluster.env, verdict) };
  } finally {
    await cluster.stop();
  }
}

/**
 * Of the days still lacking items after the night, those a backfill of the case's range, against
 * the same deploy, reads whole: days the night could have read and did not (a random order under a
 * cap reads some of a cut day's items at each answer, and a backfill's many answers may gather all).
 */
async function readByBackfill(
  t: TestDatabase,
  deployed: Simulator,
  c: SwitchCase,
  env: Record<string, string>,
  night: Verdict,
): Promise<{ lacking: number; readWhole: string[] }> {
  const lackingIn = (v: Verdict) =>
    WINDOWED_RESOURCES.flatMap((r) => v.found[r].trulyTruncated.map((day) => `${r} ${day}`));
  const lacking = lackingIn(night);
  await startCli(['backfill', '--from', c.from, '--to', c.to], env).done;
  const still = new Set(lackingIn(await judge(t, deployed.truth(), c)));
  return { lacking: lacking.length, readWhole: lacking.filter((day) => !still.has(day)) };
}

const wholeFlagged = (verdict: Verdict) =>
  WINDOWED_RESOURCES.reduce((n, r) => n + verdict.found[r].falseAlarms.length, 0);

function tallyLine(index: number, c: SwitchCase, played: Played): string {
  const { routed, verdict, run } = played;
  const byOld = routed.filter((r) => r.deploy === 'old').length;
  const cached = routed.filter((r) => r.cached === true).length;
  const switched = routed.length > c.plan.switchAt ? 'came' : 'never came';
  const next = played.nextNight.verdict;
  const backfill = played.nextNight.readByBackfill;
  const after =
    backfill === undefined
      ? ''
      : `; a backfill after it read whole ${backfill.readWhole.length} of the ${backfill.lacking} days lacking items${backfill.readWhole.length > 0 ? ` (${backfill.readWhole.join(', ')})` : ''}`;
  return `queue switch search #${index} ${c.kind} ${c.path}: exit ${run.code}, ${routed.length} window requests (${byOld} old${CACHED || c.cached === true ? ` (${cached} from the cache)` : ''}, ${routed.length - byOld} new; the deploy ${switched}), ${verdict.flagged} flagged days (${wholeFlagged(verdict)} in fact whole), ${verdict.short.length} short, ${verdict.lostFlags.length} flags lost, ${verdict.unsettled.length} unsettled, ${verdict.failedWindows} windows failed; the night after: exit ${played.nextNight.run.code}, ${next.flagged} flagged (${wholeFlagged(next)} whole), ${next.short.length} short${after}`;
}

/** A failing case's evidence: the case, its verdict, every routed request and the run's output. */
function keepEvidence(index: number, c: SwitchCase, played: Played): string {
  mkdirSync(LOG_DIR, { recursive: true });
  const file = join(LOG_DIR, `${FOUND ? 'found' : `seed-${SEED}`}-case-${index}.log`);
  const routed = played.routed
    .map((r) => `${r.n} ${r.deploy} ${r.status} served ${r.served ?? '-'} ${decodeURIComponent(r.url)}`)
    .join('\n');
  const workers = played.workers.map(
    (w, i) => `--- worker ${i + 1} (exit ${w.code})\n${w.stdout}${w.stderr}`,
  );
  writeFileSync(
    file,
    [
      describeCase(c, index),
      JSON.stringify({ before: c.before, after: c.after, plan: c.plan, seed: c.seed }),
      `short: ${JSON.stringify(played.verdict.short)}`,
      `unsettled: ${JSON.stringify(played.verdict.unsettled)}`,
      `truth per UTC day:\n${played.verdict.truthDays.join('\n')}`,
      `server_readings: ${JSON.stringify(played.readings)}`,
      `--- routed window requests (n deploy status served url)\n${routed}`,
      `--- backfill (exit ${played.run.code})\n${played.run.stdout}${played.run.stderr}`,
      ...workers,
      `--- the night after: short ${JSON.stringify(played.nextNight.verdict.short)}`,
      `--- sync (exit ${played.nextNight.run.code})\n${played.nextNight.run.stdout}${played.nextNight.run.stderr}`,
    ].join('\n'),
  );
  return file;
}

/** The found cases fixed since, played by default after the generated ones, on either path. */
const FIXED = FOUND_CASES.filter((f) => f.fixed === true).map(({ c }) => c);
/**
 * A sample played again behind a cache keyed on the whole address (a CDN that answers a request
 * it held before the deploy as then): an end bound turned exclusive, the server's day moved, a
 * cap lowered, each on the queue path (the default set's 1, 4 and 12). Every default case so, and
 * 30 of another seed (20261203): 0 short (INSIGHTS_TRIAL_CACHED=1).
 */
const CACHED_SAMPLE = [1, 4, 12].flatMap((i) => {
  const c = [...switchCases(DEFAULT_CASES, 2026_1129), ...FIXED][i];
  return c === undefined ? [] : [{ ...c, cached: true }];
});
const FLAP_ONLY = process.env.INSIGHTS_TRIAL_FLAP !== undefined;
const FLAPS = maximumFlapCases(FLAP_ONLY ? Number(process.env.INSIGHTS_TRIAL_FLAP) : 2, SEED);
const cases = (
  FOUND
    ? FOUND_CASES.map(({ c }) => c)
    : FLAP_ONLY
      ? FLAPS
      : [...switchCases(CASES, SEED), ...FIXED, ...CACHED_SAMPLE, ...FLAPS]
)
  .map((c, index) => ({ c: PATH === undefined ? c : { ...c, path: PATH }, index }))
  .filter(({ index }) => ONLY === undefined || index === ONLY);
const tally: string[] = [];
const totals = {
  requests: 0,
  flagged: 0,
  flaggedWhole: 0,
  short: 0,
  lostFlags: 0,
  unsettled: 0,
  failing: 0,
  nextFlagged: 0,
  nextWhole: 0,
  nextLacking: 0,
  readByBackfill: 0,
};

function addToTotals(played: Played): void {
  totals.requests += played.routed.length;
  totals.flagged += played.verdict.flagged;
  totals.short += played.verdict.short.length;
  totals.lostFlags += played.verdict.lostFlags.length;
  totals.unsettled += played.verdict.unsettled.length;
  totals.flaggedWhole += wholeFlagged(played.verdict);
  totals.nextFlagged += played.nextNight.verdict.flagged;
  totals.nextWhole += wholeFlagged(played.nextNight.verdict);
  totals.nextLacking += played.nextNight.readByBackfill?.lacking ?? 0;
  totals.readByBackfill += played.nextNight.readByBackfill?.readWhole.length ?? 0;
  if (failing(played)) totals.failing += 1;
}

/** Whether the case fails one of its checks below: its evidence is then kept, and it is tallied. */
function failing({ verdict, run, nextNight }: Played): boolean {
  const missedFlags = (v: Verdict) => WINDOWED_RESOURCES.some((r) => v.found[r].missedFlags.length > 0);
  return (
    verdict.short.length > 0 ||
    run.code !== 0 ||
    missedFlags(verdict) ||
    nextNight.verdict.short.length > 0 ||
    nextNight.run.code !== 0 ||
    nextNight.verdict.failedWindows > 0 ||
    missedFlags(nextNight.verdict)
  );
}

describe('a backfill over HTTP whose server is deployed while it reads, queued or direct', () => {
  afterAll(() => {
    const kinds = new Set(cases.map(({ c }) => c.kind));
    console.info(
      `queue switch search, ${FOUND ? 'found cases' : `seed ${SEED}`}: ${cases.length} cases, kinds ${[...kinds].join(' ')} (${kinds.size} of ${SWITCH_KINDS.length}); ${totals.requests} window requests, ${totals.flagged} flagged days (${totals.flaggedWhole} in fact whole; the night after ${totals.nextFlagged}, ${totals.nextWhole} whole${BACKFILL_AFTER ? `; of its ${totals.nextLacking} days lacking items a backfill read ${totals.readByBackfill} whole` : ''}), ${totals.short} short, ${totals.lostFlags} flags lost, ${totals.unsettled} unsettled, ${totals.failing} cases failing\n${tally.join('\n')}`,
    );
  });

  it('the default cases play every switch kind, on both paths, mid-run and rolling', () => {
    const defaults = switchCases(DEFAULT_CASES, SEED);
    expect(new Set(defaults.map((c) => c.kind)).size).toBe(SWITCH_KINDS.length);
    expect(new Set(defaults.map((c) => c.path))).toEqual(new Set(['queue', 'direct']));
    const rolling = defaults.filter((c) => c.plan.steadyAt > c.plan.switchAt).length;
    expect(rolling).toBeGreaterThan(0);
    expect(rolling).toBeLessThan(DEFAULT_CASES);
  });

  for (const { c, index } of cases) {
    it(
      describeCase(c, index),
      async () => {
        const played = await playCase(c);
        tally.push(tallyLine(index, c, played));
        addToTotals(played);
        const { verdict, run, nextNight } = played;
        const evidence = failing(played) || KEEP ? keepEvidence(index, c, played) : 'none kept';
        const why = `${describeCase(c, index)}; evidence: ${evidence}; ${run.stderr.slice(-2000)}`;
        // No day recorded complete lacks an item: none short, so no flag lost.
        expect(verdict.short, why).toEqual([]);
        expect(verdict.lostFlags, why).toEqual([]);
        // The run read what it could: exit 0 and every day recorded, or exit 1 (the run's failed
        // windows, docs/operating.md) with those days left failed, never recorded complete.
        expect([0, 1], why).toContain(run.code);
        if (run.code === 1) expect(verdict.failedWindows, why).toBeGreaterThan(0);
        if (run.code === 0)
          for (const resource of WINDOWED_RESOURCES)
            expect(verdict.found[resource].missedFlags, `${resource}: ${why}`).toEqual([]);
        expect(played.workers.map((w) => w.code)).toEqual(c.path === 'queue' ? [0, 0] : []);
        // A maximum limit that keeps turning stops the day's limit search: every window settles,
        // whole or flagged, none fails.
        if (FLAPS.some((flap) => flap.plan === c.plan))
          expect([run.code, verdict.failedWindows], why).toEqual([0, 0]);
        // The night after, on the new deploy alone: still no day short, no flag lost, and every
        // window run (the days flagged then lack items, or are cut where a neighbour's answer
        // brought theirs).
        const nextWhy = `the night after: ${why}; ${nextNight.run.stderr.slice(-2000)}`;
        expect(nextNight.verdict.short, nextWhy).toEqual([]);
        expect(nextNight.verdict.lostFlags, nextWhy).toEqual([]);
        expect([nextNight.run.code, nextNight.verdict.failedWindows], nextWhy).toEqual([0, 0]);
        for (const resource of WINDOWED_RESOURCES)
          expect(nextNight.verdict.found[resource].missedFlags, `${resource}: ${nextWhy}`).toEqual([]);
        // Behind a cache, it answered some of the run's requests after the deploy as before it.
        if (c.cached === true) expect(played.routed.some((r) => r.cached === true)).toBe(true);
        for (const resource of WINDOWED_RESOURCES) {
          expect(verdict.found[resource].extra, `${resource} extra: ${why}`).toBe(0);
          expect(verdict.found[resource].misplaced, `${resource} misplaced: ${why}`).toBe(0);
        }
      },
      PROCESS_TEST_MS,
    );
  }
});
