/**
 * A run's measured values, kept beside the document they render to (docs/benchmarks.json next to
 * docs/benchmarks.md). The document is a pure function of them, so a test can render it again and
 * find any hand edit, and `--render` can rewrite the prose without measuring again.
 */
import type { Machine } from './machine.js';
import { renderDoc } from './report.js';
import {
  BENCHMARK_NAMES,
  type BenchmarkName,
  FULL,
  failureOf,
  figuresOf,
  type SuiteResult,
} from './suite.js';

export interface SavedRun {
  result: Omit<SuiteResult, 'figures'>;
  machine: Machine;
  date: string;
  command: string;
  startLoad: number;
  runs: number;
  only: BenchmarkName[];
  /**
   * Benchmarks measured by a later `--only` run and merged in (mergeSaved): each says its own
   * command, date and runs, which the document prints under its section.
   */
  sections?: Partial<Record<BenchmarkName, Provenance>>;
}

export interface Provenance {
  command: string;
  date: string;
  runs: number;
  /** 1-minute load average at its start: other work on the machine shows here. */
  startLoad: number;
}

/** Where a document's measured values live: the same name, `.json` for `.md`. */
export function valuesPathOf(docPath: string): string {
  return `${docPath.replace(/\.md$/, '')}.json`;
}

export function savedRunOf(
  input: Omit<SavedRun, 'result' | 'date'> & { result: SuiteResult; date: Date },
): SavedRun {
  const { figures: _figures, ...measured } = input.result;
  return { ...input, result: measured, date: input.date.toISOString() };
}

/** The document exactly as `npm run bench` wrote it from these values. */
export function renderSaved(saved: SavedRun): string {
  const result: SuiteResult = { ...saved.result, figures: figuresOf(FULL, saved.only, saved.result.values) };
  return renderDoc({ ...saved, result, date: new Date(saved.date) });
}

/**
 * A run of some benchmarks merged into the saved values of an earlier, fuller one: their values
 * replace the earlier ones, and their sections say which command measured them, when. Everything
 * else (the machine, the date and command at the top, the load) stays the earlier run's.
 */
export function mergeSaved(base: SavedRun, fresh: SavedRun): SavedRun {
  const measured = new Set(fresh.only);
  const values = { ...base.result.values };
  for (const name of fresh.only) values[name] = fresh.result.values[name] ?? {};
  const sections = { ...base.sections };
  for (const name of fresh.only)
    sections[name] = {
      command: fresh.command,
      date: fresh.date,
      runs: fresh.runs,
      startLoad: fresh.startLoad,
    };
  return {
    ...base,
    result: {
      ...base.result,
      values,
      // A benchmark measured again: its earlier failures went with its earlier values.
      failures: [
        ...base.result.failures.filter((line) => !fresh.only.some((name) => failureOf(name, line))),
        ...fresh.result.failures,
      ],
    },
    only: BENCHMARK_NAMES.filter((name) => base.only.includes(name) || measured.has(name)),
    sections,
  };
}
