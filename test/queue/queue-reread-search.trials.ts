import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { WINDOWED_RESOURCES, type WindowedResource } from '../../src/schemas/resources.js';
import { createRandom, hashSeed } from '../../src/simulator/random.js';
import { type GroundTruth, type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, type DayString } from '../../src/time/days.js';
import { type Completeness, compareWithTruth } from '../helpers/completeness-oracle.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { sourceKeys } from '../helpers/queue-cluster.js';
import { queuedBackfills } from '../helpers/queue-requests.js';
import { type DeployPlan, type RoutedRequest, startReadingBalancer } from '../helpers/reading-balancer.js';
import {
  describeCase,
  patchOf,
  SWITCH_KINDS,
  type SwitchCase,
  servedAtMost,
  switchCases,
  TODAY,
} from './queue-switch-cases.js';

/**
 * SPEC-GAPS, "a reading that changes", on the queue path when a backfill reads again days earlier
 * runs settled and proved: the same range backfilled twice through the queue, two workers (in
 * process, runWorker), the second run from the reading the first stored. The server is two
 * simulators on one seed behind a load balancer (test/helpers/reading-balancer.ts), the old
 * reading for the whole first run; the second is deployed at a random request of the second run
 * (every fourth case at its first: between runs), half the cases a rolling deploy. Every gap a
 * deploy can change is played (queue-switch-cases.ts: each bound, order, cap, zone, instants, a
 * maximum limit, several).
 *
 * What it plays that queue-switch-search.trials.ts does not: the second run's workers start from a
 * reading earlier runs proved, so they prove once per 64 days settled (reading-session.ts,
 * provedBefore), and a range of 16 to 24 days sees no proof of theirs; every day of the range is
 * settled again by the run, so none proved before is left for the planner's last proof to ask
 * (sync/queue-proof.ts: a canary no proof found whole can prove the reading stale, not vouch for
 * it). What catches a deploy there is the rest: the stored reading's check, each answer against
 * what the run saw of a day and what earlier runs stored of it (day-plan.ts, heldBefore: a
 * worker sees only its own windows), the day after each stretch. Before that last, seed 20261209
 * case 25 once settled feedback 2026-11-09 with 27 of its 34 items (the new reading's answer
 * ended the day 5.5 h early; the day after, which held the rest, went to the other worker).
 *
 * Compared with the old simulator's ground truth (the same data as the new one's): no day recorded
 * complete (done, not flagged truncated, not reopened) lacks an item, so no flag is lost; nothing
 * extra or misplaced is stored. INSIGHTS_TRIAL_CASES=N plays N cases (default 8, every kind once,
 * about a minute on 2 shared cores), INSIGHTS_TRIAL_SEED another seed, INSIGHTS_TRIAL_ONLY=i case i
 * alone (with INSIGHTS_TRIAL_CASES above i). The requests of two workers interleave differently
 * from one run to the next: a case may pass again and again before it fails; a failing case's
 * routed requests, ledger rows, stored readings and debug logs are kept in a file (its path is in
 * the failure; INSIGHTS_TRIAL_KEEP=1 keeps every case's).
 */

const DEFAULT_CASES = SWITCH_KINDS.length;
const CASES = Number(process.env.INSIGHTS_TRIAL_CASES ?? DEFAULT_CASES);
const SEED = Number(process.env.INSIGHTS_TRIAL_SEED ?? 2026_1206);
/** As the switch search's: about 20 to 190 items a day of each resource, one day in seven above a cap of 100. */
const VOLUME = { feedbackPerDay: 55, surveyPerDay: 45, recordingsPerDay: 35, busyDayFeedback: 95 };
const WORKERS = 2;
const CASE_TEST_MS = 180_000;
const LOG_DIR = join(tmpdir(), 'queue-reread-search');
/** INSIGHTS_TRIAL_KEEP=1: every case's evidence kept, passing or not (to read how a case played). */
const KEEP_ALL = process.env.INSIGHTS_TRIAL_KEEP === '1';

/** A case of the search: the readings of a switch case, and when the second run meets the deploy. */
interface RereadCase {
  c: SwitchCase;
  index: number;
  from: DayString;
  to: DayString;
  /** Window requests of the second run answered by the old reading alone (0: deployed between runs). */
  switchAfter: number;
  /** Requests of it both readings answer at random after that (a rolling deploy); 0 for one switch. */
  stretch: number;
}

function rereadCases(count: number, seed: number): RereadCase[] {
  return switchCases(count, seed).map((c, index) => {
    const rng = createRandom(hashSeed(seed, 'queue reread case', index));
    const days = rng.int(16, 24);
    const to = addDays(TODAY, -1 - rng.int(0, 10));
    const switchAfter = index % 4 === 3 ? 0 : rng.int(1, days * 3);
    return {
      c,
      index,
      from: addDays(to, 1 - days),
      to,
      switchAfter,
      stretch: c.plan.steadyAt - c.plan.switchAt,
    };
  });
}

function describeReread(r: RereadCase): string {
  const when =
    r.switchAfter === 0 ? 'between the runs' : `at the second run's window request ${r.switchAfter}`;
  return `${describeCase(r.c, r.index).replace(/ (at|flapping from) .*$/, '')}, deployed ${when}${r.stretch > 0 ? `, rolling for ${r.stretch} requests` : ''}, ${r.from}..${r.to} read twice`;
}

/** What a case left in the warehouse, against the truth. */
interface Verdict {
  found: Record<WindowedResource, Completeness>;
  /**
   * `resource day: why`, for days recorded complete (done, not flagged, not reopened) whose record
   * is short of the truth: fewer items counted than the day holds, or an item of it lacking in the
   * table or marked absent (absent_since: a second such read marks it missing upstream, and the
   * analysts' views leave it out). The first run stored every item: a short second read loses
   * none from the table, only the record and the marks can be wrong.
   */
  short: string[];
  /** Of those, days above what one answer serves: a truncated flag lost. */
  lostFlags: string[];
  flagged: number;
  /** Window requests of the second run, and its windows. */
  requests: number;
  windows: number;
}

/** What a failing case leaves to trace it by: both runs' requests, the ledger, the readings, the logs. */
interface Evidence {
  /** Window requests routed before the second run. */
  firstRun: number;
  routed: readonly RoutedRequest[];
  ledger: unknown[];
  readings: unknown[];
  logs: string[];
}

const TABLES = { feedback: 'feedback', survey: 'survey_answers', recordings: 'recordings' } as const;
const keyOf = (item: Record<string, unknown>) => `${item.id}/${item.feedback_id ?? item.question_id ?? ''}`;

/** Per UTC day, the keys the truth holds of a resource. */
function truthByDay(truth: GroundTruth, resource: WindowedResource): Map<string, Set<string>> {
  const days = new Map<string, Set<string>>();
  for (const item of truth[resource] as unknown as (Record<string, unknown> & { dt: string })[]) {
    const day = item.dt.slice(0, 10);
    days.set(day, (days.get(day) ?? new Set()).add(keyOf(item)));
  }
  return days;
}

/** Per UTC day, the keys of the rows marked absent or missing upstream. */
async function markedByDay(t: TestDatabase, resource: WindowedResource): Promise<Map<string, Set<string>>> {
  const rows = await t.db
    .selectFrom(TABLES[resource])
    .select(['raw'])
    .where('source_id', '=', 's1')
    .where((eb) => eb.or([eb('absent_since', 'is not', null), eb('missing_upstream_since', 'is not', null)]))
    .execute();
  const days = new Map<string, Set<string>>();
  for (const { raw } of rows) {
    const item = raw as Record<string, unknown> & { dt: string };
    const day = String(item.dt).slice(0, 10);
    days.set(day, (days.get(day) ?? new Set()).add(keyOf(item)));
  }
  return days;
}

async function judge(t: TestDatabase, truth: GroundTruth, r: RereadCase): Promise<Omit<Verdict, 'requests'>> {
  const found = await compareWithTruth(t, 's1', truth, { from: r.from, to: r.to });
  const windows = await t.db
    .selectFrom('sync_windows')
    .select(['resource', 'day', 'status', 'truncated', 'reopened_at', 'item_count'])
    .where('source_id', '=', 's1')
    .execute();
  const perAnswer = Math.min(servedAtMost(r.c.before), servedAtMost(r.c.after));
  const verdict = { found, short: [] as string[], lostFlags: [] as string[], flagged: 0, windows: 0 };
  for (const resource of WINDOWED_RESOURCES) {
    verdict.flagged += found[resource].flagged.length;
    const held = truthByDay(truth, resource);
    const marked = await markedByDay(t, resource);
    const lacking = new Set(found[resource].trulyTruncated);
    for (const w of windows) {
      const day = String(w.day).slice(0, 10);
      if (w.resource !== resource || day < r.from || day > r.to) continue;
      if (w.status !== 'done' || w.truncated || w.reopened_at !== null) continue;
      const keys = held.get(day) ?? new Set<string>();
      const absent = [...(marked.get(day) ?? [])].filter((key) => keys.has(key)).length;
      if (w.item_count >= keys.size && absent === 0 && !lacking.has(day)) continue;
      const label = `${resource} ${day}: ${w.item_count} counted of ${keys.size}, ${absent} marked absent`;
      verdict.short.push(label);
      if (keys.size > perAnswer) verdict.lostFlags.push(label);
    }
  }
  return verdict;
}

/** A logger at debug level into memory: the planner's and the workers' lines, in order. */
function keptLogs(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString().trimEnd());
      callback();
    },
  });
  return { logger: createLogger({ level: 'debug', pretty: false, destination }), lines };
}

type Played = Verdict & { statuses: string[]; evidence: Evidence };

async function playCase(r: RereadCase): Promise<Played> {
  const t = await createTestDatabase();
  const logs = keptLogs();
  const sims: Simulator[] = [];
  try {
    for (const reading of [r.c.before, r.c.after])
      sims.push(
        await startSimulator({
          seed: r.c.seed,
          from: addDays(r.from, -3),
          to: TODAY,
          apiKeys: sourceKeys(1),
          latencyMs: 3,
          volume: VOLUME,
          ...patchOf(reading),
        }),
      );
    const [old, deployed] = sims as [Simulator, Simulator];
    // The balancer reads the plan at each request: the first run's whole, then moved.
    const plan: DeployPlan = { switchAt: Infinity, steadyAt: Infinity, seed: r.c.plan.seed };
    const balancer = await startReadingBalancer({ old: old.url, new: deployed.url }, plan);
    const queued = await queuedBackfills(t, { url: balancer.url } as Simulator, {
      sources: 1,
      range: { from: r.from, to: r.to },
      today: TODAY,
      logger: logs.logger,
    });
    try {
      const first = await queued.backfill(WORKERS);
      const before = balancer.routed().length;
      plan.switchAt = before + r.switchAfter;
      plan.steadyAt = plan.switchAt + r.stretch;
      const second = await queued.backfill(WORKERS);
      const requests = balancer.routed().length - before;
      const verdict = await judge(t, old.truth(), r);
      const ledger = await t.db
        .selectFrom('sync_windows')
        .selectAll()
        .orderBy('resource')
        .orderBy('day')
        .execute();
      const readings = await t.db.selectFrom('server_readings').selectAll().execute();
      return {
        ...verdict,
        requests,
        windows: second.result.windows.length,
        statuses: [first.result.status, second.result.status],
        evidence: { firstRun: before, routed: balancer.routed(), ledger, readings, logs: logs.lines },
      };
    } finally {
      await queued.stop();
      await balancer.close();
    }
  } finally {
    for (const sim of sims) await sim.stop();
    await t.drop();
  }
}

/** A failing case's evidence, in a file: the case, its verdict, every routed request, the ledger, the logs. */
function keepEvidence(r: RereadCase, played: Played): string {
  mkdirSync(LOG_DIR, { recursive: true });
  const file = join(LOG_DIR, `seed-${SEED}-case-${r.index}-${Date.now()}.log`);
  const { evidence } = played;
  const routed = evidence.routed.map(
    (q) =>
      `${q.n}${q.n === evidence.firstRun ? ' (second run)' : ''} ${q.deploy} ${q.status} served ${q.served ?? '-'} ${decodeURIComponent(q.url)}`,
  );
  writeFileSync(
    file,
    [
      describeReread(r),
      JSON.stringify({ before: r.c.before, after: r.c.after, seed: r.c.seed, statuses: played.statuses }),
      `short: ${JSON.stringify(played.short)}`,
      `server_readings: ${JSON.stringify(evidence.readings)}`,
      `--- sync_windows\n${evidence.ledger.map((w) => JSON.stringify(w)).join('\n')}`,
      `--- routed window requests (n deploy status served url)\n${routed.join('\n')}`,
      `--- logs (debug)\n${evidence.logs.join('\n')}`,
    ].join('\n'),
  );
  return file;
}

const ONLY =
  process.env.INSIGHTS_TRIAL_ONLY === undefined ? undefined : Number(process.env.INSIGHTS_TRIAL_ONLY);
const cases = rereadCases(CASES, SEED).filter((r) => ONLY === undefined || r.index === ONLY);
const tally: string[] = [];
const totals = { requests: 0, windows: 0, flagged: 0, short: 0, lostFlags: 0 };

describe('a queued backfill that reads proved days again, its server deployed while it reads', () => {
  afterAll(() => {
    console.info(
      `queue reread search, seed ${SEED}: ${cases.length} cases; second runs: ${totals.requests} window requests for ${totals.windows} windows (${(totals.requests / Math.max(1, totals.windows)).toFixed(2)} a window), ${totals.flagged} flagged days, ${totals.short} short, ${totals.lostFlags} flags lost\n${tally.join('\n')}`,
    );
  });

  it('the default cases play every switch kind, deployed between runs, mid-run and rolling', () => {
    const defaults = rereadCases(DEFAULT_CASES, SEED);
    expect(new Set(defaults.map((r) => r.c.kind)).size).toBe(SWITCH_KINDS.length);
    expect(defaults.some((r) => r.switchAfter === 0)).toBe(true);
    expect(defaults.some((r) => r.switchAfter > 0 && r.stretch === 0)).toBe(true);
    expect(defaults.some((r) => r.stretch > 0)).toBe(true);
  });

  for (const r of cases) {
    it(
      describeReread(r),
      async () => {
        const played = await playCase(r);
        tally.push(
          `#${r.index} ${r.c.kind}: runs ${played.statuses.join(', ')}, ${played.requests} requests for ${played.windows} windows, ${played.flagged} flagged, ${played.short.length} short`,
        );
        totals.requests += played.requests;
        totals.windows += played.windows;
        totals.flagged += played.flagged;
        totals.short += played.short.length;
        totals.lostFlags += played.lostFlags.length;
        const failing =
          KEEP_ALL ||
          played.short.length > 0 ||
          played.statuses.some((s) => s !== 'ok') ||
          WINDOWED_RESOURCES.some((res) => played.found[res].extra + played.found[res].misplaced > 0);
        const evidence = failing ? keepEvidence(r, played) : 'none kept';
        const why = `${describeReread(r)} (seed ${SEED}); evidence: ${evidence}`;
        // No day recorded complete lacks an item: none short, so no flag lost.
        expect(played.short, why).toEqual([]);
        expect(played.lostFlags, why).toEqual([]);
        for (const resource of WINDOWED_RESOURCES) {
          expect(played.found[resource].extra, `${resource} extra: ${why}`).toBe(0);
          expect(played.found[resource].misplaced, `${resource} misplaced: ${why}`).toBe(0);
        }
        // Both runs read their windows: a run that failed some would leave them unsettled, not short.
        expect(played.statuses, why).toEqual(['ok', 'ok']);
      },
      CASE_TEST_MS,
    );
  }
});
