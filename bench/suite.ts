/**
 * The benchmarks, their sizes (full and smoke), and running them: each benchmark `runs` times,
 * round-robin (one run of each in turn, so a noisy minute on a shared machine touches every
 * benchmark a little rather than one a lot), then the median, min and max of every figure.
 */
import { type BusySiteOptions, busySite, runBusySite } from './busy-site.js';
import type { BenchServer } from './database.js';
import { type ExtractionOptions, extraction, runExtraction } from './extraction.js';
import { type Benchmark, type FigureSpec, type RunResult, type Summary, summarize } from './figures.js';
import { type LoadOptions, load, runLoad } from './load.js';
import { loadAverage } from './machine.js';
import { type MemoryOptions, memory, runMemory } from './memory.js';
import { type QueueBenchOptions, queue, runQueue } from './queue.js';
import { type ReadingProofsOptions, readingProofs, runReadingProofs } from './reading-proofs.js';
import { runStartup, type StartupOptions, startup } from './startup.js';
import { runTimeSlices, type TimeSlicesOptions, timeSlices } from './time-slices.js';
import { runWebhooks, type WebhookOptions, webhooks } from './webhooks.js';

export interface SuiteOptions {
  extraction: ExtractionOptions;
  load: LoadOptions;
  memory: MemoryOptions;
  webhooks: WebhookOptions;
  startup: StartupOptions;
  queue: QueueBenchOptions;
  busySite: BusySiteOptions;
  timeSlices: TimeSlicesOptions;
  readingProofs: ReadingProofsOptions;
}

export const FULL: SuiteOptions = {
  extraction: { days: 365, latencyMs: 50, concurrency: 8 },
  load: { items: 200_000, parallelWindows: 8, naiveItems: 20_000 },
  // Ten times the days at the same volume a day: enough for a peak that grew with the days to show.
  memory: { small: 50_000, large: 500_000, heapCapMb: 128 },
  webhooks: { seconds: 30, healthSeconds: 10, connections: 32, fewerConnections: 16, duplicates: 0 },
  startup: { repeats: 7, backfillItems: 200_000 },
  // The latency its targets are judged at: a second one, 500 ms, would add some 15 min to the full run.
  queue: { days: 30, sources: 8, latencies: [200], workers: [1, 2, 4] },
  // Up to about 29,000 items a day of each resource (4.2 x the mean), a day in three above the cap.
  // The same week every run: a day of 16,520 items, then one of 5,677 and an empty one (feedback),
  // where whole days beside the busy one were once flagged truncated.
  busySite: { days: 7, perDay: 7_000, cap: 10_000, lastDay: '2026-12-03' },
  // Three weeks of days of none to 149 items of each resource behind a cap of 30: two windows in
  // three above the cap, the largest five times it.
  timeSlices: { days: 21, perDay: 45, cap: 30 },
  // The day plans alone, against the simulator's window logic: counts, the same on any machine.
  // Ten data sets of each source, so that a figure is not one draw's.
  readingProofs: { backfillDays: 20, nightlyDays: 4, seeds: 10 },
};

/** Seconds, not minutes: every code path of the full run, on tiny sizes (CI, `npm run bench:smoke`). */
export const SMOKE: SuiteOptions = {
  extraction: { days: 12, latencyMs: 10, concurrency: 4 },
  load: { items: 3_000, parallelWindows: 4, naiveItems: 3_000 },
  memory: { small: 2_000, large: 6_000 },
  webhooks: { seconds: 2, healthSeconds: 1, connections: 4, fewerConnections: 2, duplicates: 0.2 },
  startup: { repeats: 1, backfillItems: 2_000 },
  queue: { days: 2, sources: 2, latencies: [10], workers: [1, 2] },
  // The full run's week (windows of the cap's size, a day above it, a whole day and an empty one
  // after it), so that a statement that grows with the window, a memory bound that does not hold
  // over a week of kept answers, or a whole day flagged beside a busy one fails CI. About 30 s.
  busySite: { days: 7, perDay: 7_000, cap: 10_000, lastDay: '2026-12-03' },
  // A week: days above the cap of each resource, so that every reading probes and slices.
  timeSlices: { days: 7, perDay: 45, cap: 30 },
  // Ten days and two nights of two data sets: proofs, empty quiet days, days a deploy reopens.
  readingProofs: { backfillDays: 10, nightlyDays: 2, seeds: 2 },
};

export const BENCHMARK_NAMES = [
  'extraction',
  'load',
  'memory',
  'webhooks',
  'startup',
  'queue',
  'busy-site',
  'time-slices',
  'reading-proofs',
] as const;
export type BenchmarkName = (typeof BENCHMARK_NAMES)[number];

/**
 * The words every correctness failure of a benchmark starts with, after its run: its name, words
 * apart ('busy site'). A run of some benchmarks merged into a fuller one's values (saved.ts,
 * mergeSaved) replaces the failures of those it measured again by these, and keeps the others'.
 */
function failureLabel(name: BenchmarkName): string {
  return name.replaceAll('-', ' ');
}

/** A benchmark's failure as the suite lists it: its run, then its label unless it starts with it. */
export function failureLine(name: BenchmarkName, run: number, failure: string): string {
  const label = failureLabel(name);
  return `run ${run}: ${failure.startsWith(label) ? failure : `${label}: ${failure}`}`;
}

/** Whether a listed failure (failureLine) is one of `name`'s. */
export function failureOf(name: BenchmarkName, line: string): boolean {
  return line.replace(/^run \d+: /, '').startsWith(failureLabel(name));
}

interface Entry {
  benchmark: Benchmark<never>;
  figures: FigureSpec[];
  run: (server: BenchServer) => Promise<RunResult>;
}

function entries(
  options: SuiteOptions,
  log: (line: string) => void = () => {},
): Record<BenchmarkName, Entry> {
  return {
    extraction: {
      benchmark: extraction as Benchmark<never>,
      figures: extraction.figures(options.extraction),
      run: (server) => runExtraction(server, options.extraction),
    },
    load: {
      benchmark: load as Benchmark<never>,
      figures: load.figures(options.load),
      run: (server) => runLoad(server, options.load),
    },
    memory: {
      benchmark: memory as Benchmark<never>,
      figures: memory.figures(options.memory),
      run: (server) => runMemory(server, options.memory),
    },
    webhooks: {
      benchmark: webhooks as Benchmark<never>,
      figures: webhooks.figures(options.webhooks),
      run: (server) => runWebhooks(server, options.webhooks),
    },
    startup: {
      benchmark: startup as Benchmark<never>,
      figures: startup.figures(options.startup),
      run: (server) => runStartup(server, options.startup, log),
    },
    queue: {
      benchmark: queue as Benchmark<never>,
      figures: queue.figures(options.queue),
      run: (server) => runQueue(server, options.queue),
    },
    'busy-site': {
      benchmark: busySite as Benchmark<never>,
      figures: busySite.figures(options.busySite),
      run: (server) => runBusySite(server, options.busySite),
    },
    'time-slices': {
      benchmark: timeSlices as Benchmark<never>,
      figures: timeSlices.figures(options.timeSlices),
      run: (server) => runTimeSlices(server, options.timeSlices),
    },
    'reading-proofs': {
      benchmark: readingProofs as Benchmark<never>,
      figures: readingProofs.figures(options.readingProofs),
      run: () => runReadingProofs(options.readingProofs),
    },
  };
}

export interface FigureResult {
  benchmark: BenchmarkName;
  spec: FigureSpec;
  summary: Summary;
  values: number[];
  /** Undefined: a figure without a target. */
  met?: boolean;
}

export interface SuiteResult {
  figures: FigureResult[];
  values: MeasuredValues;
  failures: string[];
  /** 1-minute load average at the start of each measurement. */
  loads: number[];
  /** 1-minute load average every 10 s while the benchmarks ran. */
  loadsDuring: number[];
  seconds: number;
}

export async function runSuite(
  server: BenchServer,
  options: SuiteOptions,
  selection: { only: readonly BenchmarkName[]; runs: number; log?: (line: string) => void },
): Promise<SuiteResult> {
  const log = selection.log ?? (() => {});
  const all = entries(options, log);
  const started = performance.now();
  const results = new Map<BenchmarkName, RunResult[]>();
  const failures: string[] = [];
  const loads: number[] = [];
  const loadsDuring: number[] = [loadAverage()];
  const sampler = setInterval(() => loadsDuring.push(loadAverage()), 10_000);
  for (let run = 1; run <= selection.runs; run++) {
    for (const name of selection.only) {
      const entry = all[name];
      const load = loadAverage();
      loads.push(load);
      log(`${name}: run ${run} of ${selection.runs} (load average ${load.toFixed(2)})`);
      const t0 = performance.now();
      try {
        const result = await entry.run(server);
        results.set(name, [...(results.get(name) ?? []), result]);
        failures.push(...result.failures.map((f) => failureLine(name, run, f)));
      } catch (error) {
        const failure = `failed: ${error instanceof Error ? error.stack : String(error)}`;
        failures.push(failureLine(name, run, failure));
      }
      log(`${name}: run ${run} took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
  }
  clearInterval(sampler);
  const values: MeasuredValues = {};
  for (const name of selection.only) {
    const runs = results.get(name) ?? [];
    values[name] = {};
    for (const spec of all[name].figures)
      values[name][spec.key] = runs
        .map((r) => r.measures[spec.key])
        .filter((v): v is number => v !== undefined);
  }
  return {
    figures: figuresOf(options, selection.only, values),
    values,
    failures,
    loads,
    loadsDuring,
    seconds: (performance.now() - started) / 1000,
  };
}

/** Every run's value of every figure, by benchmark and key: what `--save` keeps. */
export type MeasuredValues = Partial<Record<BenchmarkName, Record<string, number[]>>>;

/** The figures, summarised and judged against their targets, from the values of the runs. */
export function figuresOf(
  options: SuiteOptions,
  only: readonly BenchmarkName[],
  values: MeasuredValues,
): FigureResult[] {
  const all = entries(options);
  return only.flatMap((name) =>
    all[name].figures.map((spec): FigureResult => {
      const runs = values[name]?.[spec.key] ?? [];
      const summary = summarize(runs);
      return {
        benchmark: name,
        spec,
        summary,
        values: runs,
        ...(spec.target === undefined ? {} : { met: summary.runs > 0 && spec.target.met(summary) }),
      };
    }),
  );
}

export function targetsOf(name: BenchmarkName): string {
  return entries(FULL)[name].benchmark.targets;
}
