import cliProgress from 'cli-progress';
import { type Logger, stderrLines, type TerminalLines } from '../log/logger.js';
import type { WindowOutcome } from '../sync/outcomes.js';

/** The callbacks runSync calls (onPlan, onWindow), shown as a bar or as log lines. */
export interface RunProgress {
  onPlan(totalWindows: number, runId: number): void;
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
}

export interface ProgressFigures {
  daysDone: number;
  days: number;
  windowsDone: number;
  windows: number;
  items: number;
  itemsPerSecond: number;
  /** null until the first window is done. */
  etaSeconds: number | null;
}

/** A backfill's progress: days done of total, items, rate and ETA. */
export function createProgress(options: ProgressOptions): RunProgress {
  const now = options.now ?? Date.now;
  const started = now();
  const doneByDay = new Map<string, number>();
  let windows = 0;
  let items = 0;
  let lastLog = started;
  let logger = options.logger;
  let bar: cliProgress.SingleBar | undefined;
  const lines = options.lines ?? stderrLines;

  const figures = (done: number): ProgressFigures => {
    const perDay = options.days.length === 0 ? 1 : Math.max(1, Math.round(windows / options.days.length));
    const daysDone = [...doneByDay.values()].filter((n) => n >= perDay).length;
    const seconds = Math.max((now() - started) / 1000, 0.001);
    return {
      daysDone,
      days: options.days.length,
      windowsDone: done,
      windows,
      items,
      itemsPerSecond: Math.round(items / seconds),
      etaSeconds: done === 0 ? null : Math.round((seconds / done) * (windows - done)),
    };
  };

  return {
    onPlan(total, runId) {
      windows = total;
      logger = options.logger.child({ runId });
      if (!options.tty || total === 0) return;
      bar = new cliProgress.SingleBar(
        {
          format:
            'backfill |{bar}| {daysDone}/{days} days | {items} items | {rate} items/s | ETA {eta_formatted}',
          stream: lines.target,
          hideCursor: true,
          clearOnComplete: false,
          etaBuffer: 50,
        },
        cliProgress.Presets.shades_classic,
      );
      bar.start(total, 0, payload(figures(0)));
      const drawn = bar;
      lines.setDrawn({
        clear: () => lines.target.write('\r\u001b[2K'),
        // The bar redraws only what changed; after a clear, all of it.
        redraw: () => {
          (drawn as unknown as { lastDrawnString: string }).lastDrawnString = '';
          drawn.render();
        },
      });
    },
    onWindow(outcome, done) {
      doneByDay.set(outcome.day, (doneByDay.get(outcome.day) ?? 0) + 1);
      items += outcome.fetched;
      const current = figures(done);
      if (bar) {
        bar.update(done, payload(current));
        return;
      }
      const time = now();
      if (done === windows || time - lastLog >= (options.logEveryMs ?? 10_000)) {
        lastLog = time;
        logger.info(current, 'backfill progress');
      }
    },
    stop() {
      if (bar) lines.setDrawn(undefined);
      bar?.stop();
      bar = undefined;
    },
  };
}

function payload(f: ProgressFigures) {
  return { daysDone: f.daysDone, days: f.days, items: f.items, rate: f.itemsPerSecond };
}
