import type { Logger } from '../log/logger.js';

export interface ShutdownOptions {
  logger: Logger;
  /**
   * From the first signal to the exit, at most (INSIGHTS_SHUTDOWN_GRACE_MS). Windows in flight
   * get this long to commit; then the process exits anyway and their transactions roll back.
   */
  graceMs: number;
  /** Last words before a forced exit (e.g. record the run as interrupted); given a bounded time. */
  onForce?: (reason: string) => Promise<void>;
  /** Default process.exit. */
  exit?: (code: number) => void;
}

export interface Shutdown {
  /** Aborted on the first SIGINT/SIGTERM: take no new work, let work in flight end. */
  signal: AbortSignal;
  dispose(): void;
}

/**
 * Exit code of a run that a signal stopped, SIGINT or SIGTERM alike: 130 (128 + SIGINT, as shells
 * report Ctrl+C). The run ends cleanly either way, so the two are not told apart.
 */
const INTERRUPTED_EXIT_CODE = 130;
/** The most of the grace period kept for onForce, so the exit still comes within it. */
const FORCE_BUDGET_MS = 2000;
/**
 * The same signal this soon after the first is that one heard twice, not a second: the launcher
 * (bin/launch.js) forwards a signal the child did not report within 50 ms, and a child whose event
 * loop was busy then reports Ctrl+C late, so the terminal's copy and the forwarded one are handled
 * back to back when the loop frees. A person's second Ctrl+C comes later than this. Another signal
 * (a SIGINT after a SIGTERM) is a second one however soon: the busy loop hears both late too.
 */
export const SAME_SIGNAL_MS = 200;

/**
 * The first SIGINT/SIGTERM aborts `signal`, so a run stops taking new windows and ends cleanly.
 * If that takes longer than the grace period, or a second signal comes, the process exits anyway:
 * each window is one transaction, so what was not committed rolls back and nothing is half-written.
 */
export function shutdownSignal(options: ShutdownOptions): Shutdown {
  const { logger, graceMs } = options;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const controller = new AbortController();
  const budget = Math.min(FORCE_BUDGET_MS, Math.floor(graceMs / 4));
  let graceTimer: NodeJS.Timeout | undefined;
  let forcing = false;
  let firstAt = 0;
  let first: NodeJS.Signals | undefined;

  const force = (reason: string) => {
    if (forcing) return;
    forcing = true;
    logger.error({ reason }, 'exiting now: work not committed yet is rolled back');
    const lastWords = options.onForce?.(reason).catch(() => {}) ?? Promise.resolve();
    const deadline = new Promise((resolve) => setTimeout(resolve, budget).unref());
    void Promise.race([lastWords, deadline]).then(() => exit(INTERRUPTED_EXIT_CODE));
  };
  const handler = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      if (signal !== first || performance.now() - firstAt >= SAME_SIGNAL_MS) force(`a second ${signal}`);
      return;
    }
    firstAt = performance.now();
    first = signal;
    logger.warn(
      { signal, graceMs },
      'stopping: no new windows; windows in flight may finish within the grace period (a second signal exits at once)',
    );
    controller.abort(new Error(`received ${signal}`));
    // unref: a run that ends in time lets the process exit without waiting for this timer.
    graceTimer = setTimeout(
      () => force(`the shutdown grace period of ${graceMs} ms ran out`),
      graceMs - budget,
    ).unref();
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      clearTimeout(graceTimer);
    },
  };
}
