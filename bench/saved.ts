/**
 * A run's measured values, kept beside the document they render to (docs/benchmarks.json next to
 * docs/benchmarks.md). The document is a pure function of them, so a test can render it again and
 * find any hand edit, and `--render` can rewrite the prose without measuring again.
 */
import type { Machine } from './machine.js';
import { renderDoc } from './report.js';
import { type BenchmarkName, FULL, figuresOf, type SuiteResult } from './suite.js';

export interface SavedRun {
  result: Omit<SuiteResult, 'figures'>;
  machine: Machine;
  date: string;
  command: string;
  startLoad: number;
  runs: number;
  only: BenchmarkName[];
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
