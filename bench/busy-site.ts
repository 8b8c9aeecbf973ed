/**
 * A busy site: days of tens of thousands of feedback items, survey answers and recordings, a
 * server that caps every response at 10,000 (INSIGHTS_MAX_LIMIT's default), and the CLI with its
 * default settings (no INSIGHTS_LIMIT, no heap flag): the backfill must exit 0, store every item
 * the server lets a whole-day reading reach (the first `cap` of each day, oldest first), flag
 * exactly the days above the cap as truncated, and stay within its memory bound.
 */
import { sql } from 'kysely';
import { generateDataset } from '../src/simulator/server.js';
import { addDays, daysFrom, todayUtc } from '../src/time/days.js';
import type { BenchServer } from './database.js';
import type { Benchmark, RunResult } from './figures.js';
import { backfill, cleanEnv, startSimulatorProcess } from './memory.js';

export interface BusySiteOptions {
  days: number;
  /** Mean items a day of each resource; a day varies from 0.16 to 4.2 times it (day-plan.ts). */
  perDay: number;
  /** The server's cap: most items one response holds. */
  cap: number;
  /**
   * The range's last day: the same days every run, so that a section measured one day reproduces
   * on another (the simulator draws a day's size from its date). Unset, the latest closed days.
   */
  lastDay?: string;
}

const RESOURCES = ['feedback', 'survey', 'recordings'] as const;
type Resource = (typeof RESOURCES)[number];
const TABLE: Record<Resource, string> = {
  feedback: 'feedback',
  survey: 'survey_answers',
  recordings: 'recordings',
};

export const busySite: Benchmark<BusySiteOptions> = {
  name: 'busy-site',
  targets: 'busy site',
  figures: ({ days, cap }) => [
    { key: 'served', label: `items on the server (${days} days)`, unit: '', digits: 0 },
    { key: 'biggestDay', label: 'largest day of one resource', unit: '', digits: 0 },
    { key: 'reachable', label: `items a whole-day reading reaches (cap ${fmt(cap)})`, unit: '', digits: 0 },
    {
      key: 'storedShare',
      label: 'of those, stored',
      unit: '%',
      digits: 1,
      target: { text: '100% in every run', met: (s) => s.min === 100 },
    },
    { key: 'truncatedDays', label: 'days flagged truncated (all above the cap)', unit: '', digits: 0 },
    { key: 'seconds', label: 'backfill duration', unit: 's', digits: 1 },
    { key: 'itemsPerS', label: 'items stored per second', unit: '/s', digits: 0 },
    {
      key: 'peakMb',
      label: 'peak RSS of the backfill process, default settings',
      unit: 'MB',
      digits: 0,
      target: { text: '≤ 250 MB in every run', met: (s) => s.max <= 250 },
    },
  ],
};

function fmt(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * Items of each resource and day, as the simulator serves them for this range; `plans`: from
 * each day's plan alone (cheap: no item generated), which leaves out the range's own rules (its
 * third day is an empty one).
 */
export function dayCounts(
  from: string,
  to: string,
  perDay: number,
  how: 'items' | 'plans' = 'items',
): Map<string, Record<Resource, number>> {
  const volume = {
    feedbackPerDay: perDay,
    surveyPerDay: perDay,
    recordingsPerDay: perDay,
    busyDayFeedback: 0,
  };
  const dataset = generateDataset({ from, to, volume });
  const counts = new Map<string, Record<Resource, number>>();
  for (const day of daysFrom(from, to)) {
    if (how === 'plans') {
      counts.set(day, generateDataset({ from: day, to: day, volume }).totals());
      continue;
    }
    // One day at a time: a day's items are generated on demand and dropped from the cache later.
    const items = dataset.day(day);
    counts.set(day, {
      feedback: items.feedback.length,
      survey: items.survey.length,
      recordings: items.recordings.length,
    });
  }
  return counts;
}

/**
 * The range of `days` days ending on `lastDay`, or else the latest closed days, in which each
 * resource has a day above the cap: the simulator draws a day's size from its date, so the last
 * week may well be a quiet one.
 */
export function busyRange(
  options: BusySiteOptions,
  today: string = todayUtc(new Date()),
): { from: string; to: string } {
  const last = options.lastDay ?? addDays(today, -1);
  for (let back = 0; ; back++) {
    const to = addDays(last, -back);
    const from = addDays(to, -(options.days - 1));
    const counts = [...dayCounts(from, to, options.perDay, 'plans').values()];
    if (RESOURCES.every((resource) => counts.some((day) => day[resource] > options.cap))) return { from, to };
    if (options.lastDay !== undefined)
      throw new Error(
        `the ${options.days} days to ${options.lastDay} hold no day above ${options.cap} of each resource`,
      );
    if (back > 365)
      throw new Error(`no ${options.days} days in the last year hold a day above ${options.cap}`);
  }
}

export async function runBusySite(server: BenchServer, options: BusySiteOptions): Promise<RunResult> {
  const { from, to } = busyRange(options);
  const counts = dayCounts(from, to, options.perDay);
  const volume = {
    feedbackPerDay: options.perDay,
    surveyPerDay: options.perDay,
    recordingsPerDay: options.perDay,
    busyDayFeedback: 0,
  };
  const simulator = await startSimulatorProcess(from, to, { cap: options.cap, volume });
  const warehouse = await server.createDatabase({ max: 1 });
  try {
    const env = cleanEnv({
      DATABASE_URL: warehouse.url,
      INSIGHTS_API_URL: simulator.url,
      INSIGHTS_API_KEY: 'sim-key',
      LOG_LEVEL: 'warn',
    });
    const run = await backfill(env, from, to);
    const failures: string[] = [];
    if (run.code !== 0)
      failures.push(`busy site: backfill exited with ${run.code}: ${run.stderr.trim().slice(-500)}`);
    const ledger = await sql<{ resource: Resource; day: string; item_count: number; truncated: boolean }>`
      select resource, day::text as day, item_count, truncated from sync_windows`.execute(warehouse.db);
    const byKey = new Map(ledger.rows.map((row) => [`${row.resource} ${row.day}`, row]));
    let served = 0;
    let reachable = 0;
    let biggestDay = 0;
    let truncatedDays = 0;
    for (const [day, perResource] of counts) {
      for (const resource of RESOURCES) {
        const n = perResource[resource];
        served += n;
        biggestDay = Math.max(biggestDay, n);
        reachable += Math.min(n, options.cap);
        const row = byKey.get(`${resource} ${day}`);
        if (row === undefined) {
          failures.push(`busy site: no ledger row for ${resource} ${day}`);
          continue;
        }
        if (row.item_count !== Math.min(n, options.cap))
          failures.push(
            `busy site: ${resource} ${day}: ${row.item_count} items in the ledger, the server lets ${Math.min(n, options.cap)} of ${n} be read`,
          );
        // A day of exactly the cap cannot be told from a full one: either flag is right.
        if (n !== options.cap && row.truncated !== n > options.cap)
          failures.push(
            `busy site: ${resource} ${day} (${n} items, cap ${options.cap}): truncated ${row.truncated}`,
          );
        if (row.truncated) truncatedDays += 1;
      }
    }
    let stored = 0;
    for (const resource of RESOURCES) {
      const { rows } = await sql<{
        n: string;
      }>`select count(*) as n from ${sql.table(TABLE[resource])}`.execute(warehouse.db);
      stored += Number(rows[0]?.n ?? 0);
    }
    if (stored !== reachable)
      failures.push(`busy site: ${stored} items stored, a whole-day reading reaches ${reachable}`);
    return {
      measures: {
        served,
        biggestDay,
        reachable,
        storedShare: reachable === 0 ? 100 : (100 * stored) / reachable,
        truncatedDays,
        seconds: run.seconds,
        itemsPerS: stored / run.seconds,
        peakMb: (run.peakKb * 1024) / 1e6,
      },
      failures,
    };
  } finally {
    simulator.child.kill('SIGTERM');
    await warehouse.drop();
  }
}
