/**
 * Reading proofs: what the run's proofs of the server's reading (src/extract/reading-session.ts)
 * cost in requests, on a quiet, a normal and a busy source, for a backfill and a nightly sync; and
 * what a server that changes its reading in the middle of a backfill costs. The day plans run
 * against the simulator's own window logic through the search harness of the extract tests
 * (test/extract/reading-search.ts, midrun-search.ts): no HTTP, no database, so every figure is a
 * count, the same on any machine, and moves only when the code does.
 */
import { emptyReading } from '../src/extract/server-reading.js';
import { createRandom, hashSeed } from '../src/simulator/random.js';
import { addDays, type DayString, daysFrom } from '../src/time/days.js';
import { SwitchingServer } from '../test/extract/midrun-search.js';
import {
  type DayCost,
  type DaySizes,
  QuietServer,
  readRun,
  storedKnowledge,
  TODAY,
} from '../test/extract/reading-search.js';
import { type ServedReading, STEADY_CAPPED } from '../test/helpers/sim-readings.js';
import type { Benchmark, FigureSpec, RunResult, Summary } from './figures.js';

export interface ReadingProofsOptions {
  backfillDays: number;
  /** The nightly sync's days, after the backfill's. */
  nightlyDays: number;
  /** Data sets drawn for each source (one seed each); every figure is over all of them. */
  seeds: number;
}

type SourceName = 'quiet' | 'normal' | 'busy';

interface Source {
  sizes: DaySizes;
  reading: ServedReading;
  describe: string;
}

export const SOURCES: Record<SourceName, Source> = {
  quiet: { sizes: { most: 3 }, reading: STEADY_CAPPED, describe: '0-3 items a day' },
  normal: { sizes: { least: 20, most: 100 }, reading: STEADY_CAPPED, describe: '20-100 a day, cap 100' },
  busy: {
    sizes: { least: 150, most: 400 },
    reading: { ...STEADY_CAPPED, instants: 'honoured' },
    describe: '150-400 a day, cap 100, instants honoured',
  },
};
const NAMES = Object.keys(SOURCES) as SourceName[];

/** The deploy of the issue: the end bound turns exclusive during the backfill. */
const DEPLOYED: Partial<ServedReading> = { enddate: 'exclusive' };

/** What one or more runs asked, and what they left. */
interface Counts {
  days: number;
  requests: number;
  /** Fewest requests any reader needs: one full response each, max(1, ceil(items / cap)) a day. */
  ideal: number;
  proofRequests: number;
  emptyDays: number;
  /** Requests of empty days beyond their one, proofs left out. */
  emptyExtra: number;
  reopened: number;
  /** Days settled whole (not flagged) with fewer items than the server holds. */
  short: string[];
}

function noCounts(): Counts {
  return {
    days: 0,
    requests: 0,
    ideal: 0,
    proofRequests: 0,
    emptyDays: 0,
    emptyExtra: 0,
    reopened: 0,
    short: [],
  };
}

/** Reads `days` as one run on `knowledge`, adding to `counts` what it asked and what it left short. */
function measureRun(
  server: QuietServer,
  days: readonly DayString[],
  knowledge: ReturnType<typeof storedKnowledge>,
  counts: Counts,
  label: string,
): void {
  const requestsBefore = server.requests;
  const proofsBefore = knowledge.session?.proofs.requests ?? 0;
  const onDay = (day: DayString, cost: DayCost) => {
    if (server.itemsOn(day).length === 0) counts.emptyExtra += cost.requests - cost.proofRequests - 1;
  };
  const run = readRun(server, days, knowledge, onDay);
  const cap = server.reading.cap;
  for (const day of days) {
    const truth = server.itemsOn(day);
    counts.days += 1;
    counts.ideal += Math.max(1, Math.ceil(truth.length / cap));
    if (truth.length === 0) counts.emptyDays += 1;
    const result = run.results.get(day);
    if (result === undefined || result.truncated) continue;
    const missing = truth.filter((id) => !result.ids.has(id)).length;
    if (missing > 0) counts.short.push(`${label} ${day}: ${result.ids.size} of ${truth.length}`);
  }
  counts.requests += server.requests - requestsBefore;
  counts.proofRequests += (knowledge.session?.proofs.requests ?? 0) - proofsBefore;
  counts.reopened += run.reopened;
}

interface SourceCounts {
  backfill: Counts;
  nightly: Counts;
  midrun: Counts;
}

/** Every seed of one source: a steady backfill then a nightly sync, and a backfill across a deploy. */
function measureSource(name: SourceName, options: ReadingProofsOptions): SourceCounts {
  const { sizes, reading } = SOURCES[name];
  const counts: SourceCounts = { backfill: noCounts(), nightly: noCounts(), midrun: noCounts() };
  const nightlyDays = daysFrom(addDays(TODAY, -options.nightlyDays), addDays(TODAY, -1));
  const backfillDays = daysFrom(
    addDays(TODAY, -options.nightlyDays - options.backfillDays),
    addDays(TODAY, -options.nightlyDays - 1),
  );
  const from = addDays(TODAY, -options.nightlyDays - options.backfillDays - 5);
  const to = addDays(TODAY, 5);
  for (let i = 0; i < options.seeds; i++) {
    const seed = hashSeed(20261201, name, i);
    const server = new QuietServer(seed, from, to, reading, sizes);
    const learned = storedKnowledge(emptyReading());
    const backfillRequests = server.requests;
    measureRun(server, backfillDays, learned, counts.backfill, `${name} seed ${i} backfill`);
    const steadyLength = server.requests - backfillRequests;
    // The next night starts from the reading the backfill stored, as run-sync does.
    measureRun(
      server,
      nightlyDays,
      storedKnowledge(learned.reading),
      counts.nightly,
      `${name} seed ${i} nightly`,
    );
    // The same backfill on the same data, the server deployed at a seeded request of it.
    const at = createRandom(hashSeed(seed, 'deploy')).int(20, 80) / 100;
    const switchAt = Math.floor(at * steadyLength);
    const after = { ...reading, ...DEPLOYED };
    const switching = new SwitchingServer(seed, from, to, reading, after, switchAt, switchAt, sizes);
    measureRun(
      switching,
      backfillDays,
      storedKnowledge(emptyReading()),
      counts.midrun,
      `${name} seed ${i} deploy`,
    );
  }
  return counts;
}

export async function runReadingProofs(options: ReadingProofsOptions): Promise<RunResult> {
  const measures: Record<string, number> = {};
  const failures: string[] = [];
  for (const name of NAMES) {
    const counts = measureSource(name, options);
    for (const run of ['backfill', 'nightly'] as const) {
      const c = counts[run];
      measures[`${name}${cased(run)}PerDay`] = c.requests / c.days;
      measures[`${name}${cased(run)}IdealPerDay`] = c.ideal / c.days;
      measures[`${name}${cased(run)}Proofs`] = c.proofRequests / options.seeds;
      measures[`${name}${cased(run)}EmptyExtra`] = c.emptyExtra / options.seeds;
    }
    measures[`${name}EmptyDays`] = counts.backfill.emptyDays / options.seeds;
    measures[`${name}DeployReopened`] = counts.midrun.reopened / options.seeds;
    measures[`${name}DeployPerDay`] = counts.midrun.requests / counts.midrun.days;
    measures[`${name}SteadyShort`] = counts.backfill.short.length + counts.nightly.short.length;
    measures[`${name}DeployShort`] = counts.midrun.short.length;
    for (const c of [counts.backfill, counts.nightly, counts.midrun])
      failures.push(...c.short.map((day) => `settled short: ${day}`));
  }
  return { measures, failures };
}

function cased(run: 'backfill' | 'nightly'): string {
  return run === 'backfill' ? 'Backfill' : 'Nightly';
}

export const readingProofs: Benchmark<ReadingProofsOptions> = {
  name: 'reading-proofs',
  targets: 'reading proofs',
  figures: ({ backfillDays, nightlyDays }) =>
    NAMES.flatMap((name): FigureSpec[] => {
      const source = `${name} (${SOURCES[name].describe})`;
      const runFigures = (run: 'backfill' | 'nightly', days: number): FigureSpec[] => {
        const what = `${source}, ${days}-day ${run}`;
        return [
          { key: `${name}${cased(run)}PerDay`, label: `${what}: requests a day`, unit: '', digits: 2 },
          {
            key: `${name}${cased(run)}IdealPerDay`,
            label: `${what}: ideal a day (1; ceil(items / cap) above the cap)`,
            unit: '',
            digits: 2,
          },
          { key: `${name}${cased(run)}Proofs`, label: `${what}: proof requests a run`, unit: '', digits: 1 },
          {
            key: `${name}${cased(run)}EmptyExtra`,
            label: `${what}: extra requests of empty days a run`,
            unit: '',
            digits: 1,
          },
        ];
      };
      const none = { text: '0 in every run', met: (s: Summary) => s.max === 0 };
      return [
        {
          key: `${name}SteadyShort`,
          label: `${source}, steady: days settled complete but short`,
          unit: '',
          digits: 0,
          target: none,
        },
        ...runFigures('backfill', backfillDays),
        ...(name === 'quiet'
          ? [{ key: `${name}EmptyDays`, label: `${source}: empty days a backfill`, unit: '', digits: 1 }]
          : []),
        ...runFigures('nightly', nightlyDays),
        {
          key: `${name}DeployReopened`,
          label: `${source}, end bound exclusive mid-backfill: days reopened a run`,
          unit: '',
          digits: 1,
        },
        {
          key: `${name}DeployPerDay`,
          label: `${source}, end bound exclusive mid-backfill: requests a day`,
          unit: '',
          digits: 2,
        },
        {
          key: `${name}DeployShort`,
          label: `${source}, end bound exclusive mid-backfill: days settled complete but short`,
          unit: '',
          digits: 0,
          target: none,
        },
      ];
    }),
};
