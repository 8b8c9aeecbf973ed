import { type Logger, stderrLines, type TerminalLines } from '../log/logger.js';
import type { WindowOutcome } from '../sync/outcomes.js';

/** The callbacks runSync calls (onPlan, onWindow), shown as a bar or as log lines. */
export interface RunProgress {
  onPlan(totalWindows: number, runId: number): void;
  /** total grows past the plan when the run reads reopened days again. */
  onWindow(outcome: WindowOutcome, done: number, total: number): void;
  stop(): void;
}

export interface ProgressOptions {
  /** The days of the range: every source and resource has one window per day. */
  days: readonly string[];
  logger: Logger;
  /** A bar on a terminal; plain log lines otherwise (pipes, files, CI). */
  tty: boolean;
  /** Where the bar is drawn; log lines written through it are put above the bar. Default stderr. */
  lines?: TerminalLines;
  now?: () => number;
  /** Least time between two log lines when not on a terminal. Default 10 s. */
  logEveryMs?: number;
  /** What the bar and the log line call the work: the command. Default 'backfill'. */
  label?: 'backfill' | 'verify';
}

export interface ProgressFigures {
  /** Days whose every window loaded (done, or open for today). */
  daysDone: number;
  days: number;
  /** Windows that ran to an end (loaded or failed); skipped ones (a stop, a refused key) are not. */
  windowsDone: number;
  windows: number;
  /** Windows not run: the run stopped, or their source or endpoint was refused. */
  windowsSkipped: number;
  items: number;
  itemsPerSecond: number;
  /** null until the first window is done, and once nothing is left to run. */
  etaSeconds: number | null;
}

/** Least time between two draws of the bar: a redraw per window would flood a slow terminal. */
const DRAW_EVERY_MS = 100;
const BAR_WIDTH = 30;
const CLEAR_LINE = '\r\u001b[2K';

/** A backfill's or a verify's progress: days done of total, items, rate and ETA. */
export function createProgress(options: ProgressOptions): RunProgress {
  const now = options.now ?? Date.now;
  const label = options.label ?? 'backfill';
  const started = now();
  // A day's windows by source and resource: a window read again (its day reopened) counts once.
  const loadedByDay = new Map<string, Set<string>>();
  let planned = 0;
  let windows = 0;
  let ran = 0;
  let skipped = 0;
  let items = 0;
  let lastLog = started;
  let logger = options.logger;
  const lines = options.lines ?? stderrLines;
  let bar: { text: string; drawnAt: number } | undefined;

  const figures = (): ProgressFigures => {
    const perDay = options.days.length === 0 ? 1 : Math.max(1, Math.round(planned / options.days.length));
    const daysDone = [...loadedByDay.values()].filter((read) => read.size >= perDay).length;
    const seconds = Math.max((now() - started) / 1000, 0.001);
    const left = windows - ran - skipped;
    return {
      daysDone,
      days: options.days.length,
      windowsDone: ran,
      windows,
      windowsSkipped: skipped,
      items,
      itemsPerSecond: Math.round(items / seconds),
      etaSeconds: ran === 0 || left <= 0 ? null : Math.round((seconds / ran) * left),
    };
  };
  const columns = () => (lines.target as { columns?: number }).columns ?? 80;
  const draw = (force: boolean) => {
    if (!bar) return;
    const time = now();
    if (!force && time - bar.drawnAt < DRAW_EVERY_MS) return;
    bar.text = barLine(figures(), columns(), label);
    bar.drawnAt = time;
    lines.target.write(`${CLEAR_LINE}${bar.text}`);
  };

  return {
    onPlan(total, runId) {
      planned = total;
      windows = total;
      logger = options.logger.child({ runId });
      if (!options.tty || total === 0) return;
      bar = { text: '', drawnAt: Number.NEGATIVE_INFINITY };
      // A log line clears the bar's line, takes it, and the bar is drawn again below: no cursor
      // is saved or moved, so nothing written meanwhile can be drawn over.
      lines.setDrawn({
        clear: () => lines.target.write(CLEAR_LINE),
        redraw: () => bar && lines.target.write(bar.text),
      });
      draw(true);
    },
    onWindow(outcome, done, total) {
      windows = Math.max(windows, total, done);
      if (outcome.status === 'skipped') skipped += 1;
      else ran += 1;
      if (outcome.status === 'done' || outcome.status === 'open') {
        const read = loadedByDay.get(outcome.day) ?? new Set<string>();
        loadedByDay.set(outcome.day, read.add(`${outcome.source}\u0000${outcome.resource}`));
      }
      items += outcome.fetched;
      if (bar) return draw(done === windows);
      const time = now();
      if (done === windows || time - lastLog >= (options.logEveryMs ?? 10_000)) {
        lastLog = time;
        logger.info(figures(), `${label} progress`);
      }
    },
    stop() {
      if (!bar) return;
      // The last state stays on screen, on a line of its own, above what comes next.
      draw(true);
      lines.target.write('\n');
      lines.setDrawn(undefined);
      bar = undefined;
    },
  };
}

/** The bar's one line, no wider than the terminal (a wrapped line could not be cleared). */
function barLine(f: ProgressFigures, columns: number, label: string): string {
  const share = f.windows === 0 ? 1 : Math.min(1, f.windowsDone / f.windows);
  const filled = Math.round(share * BAR_WIDTH);
  const parts = [
    `${label} |${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}| ${f.daysDone}/${f.days} days`,
    `${f.items} items`,
    `${f.itemsPerSecond} items/s`,
    f.windowsSkipped > 0
      ? `${f.windowsSkipped} windows not run`
      : `ETA ${f.etaSeconds === null ? '-' : formatSeconds(f.etaSeconds)}`,
  ];
  return [...parts.join(' | ')].slice(0, Math.max(1, columns - 1)).join('');
}

function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}
