/** What one run of one benchmark measured: numbers by key, and what was wrong (lost rows, ...). */
export interface RunResult {
  measures: Record<string, number>;
  /** Correctness failures; a benchmark that lost data fails whatever its speed. */
  failures: string[];
}

export interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number;
}

/** One figure of the results table. */
export interface FigureSpec {
  key: string;
  label: string;
  unit: string;
  /** Decimals shown. */
  digits: number;
  target?: {
    /** As the doc states it, e.g. "≥ 70% of COPY". */
    text: string;
    /** Judged on the summary: the median for rates and ratios, the max for bounds that must always hold. */
    met: (summary: Summary) => boolean;
  };
}

export interface Benchmark<Options> {
  name: string;
  /** The target numbers this benchmark measures, e.g. "2, 3, 6". */
  targets: string;
  figures(options: Options): FigureSpec[];
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, runs: 0 };
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1
      ? (sorted[mid] as number)
      : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  return { median, min: sorted[0] as number, max: sorted.at(-1) as number, runs: sorted.length };
}

export function percent(part: number, whole: number): number {
  return whole === 0 ? Number.NaN : (100 * part) / whole;
}
