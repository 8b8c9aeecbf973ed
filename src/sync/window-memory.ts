import { getHeapStatistics } from 'node:v8';

/**
 * What the windows in flight hold, bounded by bytes. A window of a busy day (10,000 items) holds
 * tens of MB from its answers to its commit: the answers as parsed, the validated items, their
 * rows and COPY text. A bound on the number of windows alone admits eight of them at once, and a
 * heap limit then ends the run; here a window goes on only while what it holds fits the budget
 * next to the windows in flight.
 *
 * - A window is admitted with an estimate: the most a window of its source and resource has held
 *   so far in the run (a site's days are alike), reserved while it runs.
 * - Before any window of a source and resource has its answers, one of them goes first with
 *   nothing reserved (a window stuck in retries then holds no one up); the others wait until it
 *   knows its size.
 * - Once its answers are in, a window reserves what it will hold before it validates and loads
 *   them, waiting if that does not fit. When every window in flight waits, the first goes on:
 *   a day larger than the budget still loads, alone.
 */
export interface WindowMemory {
  /** Waits until a window of `key` ("source/resource") may start. */
  admit(key: string): Promise<WindowLease>;
}

export interface WindowLease {
  /** The window's answers are in and it will hold `bytes`: waits until that fits. */
  holds(bytes: number): Promise<void>;
  /** The window has committed or failed: its bytes are free. */
  release(): void;
}

/**
 * What one parsed item holds per byte of its JSON text, through a window's life: the parsed
 * object, its validated copy, its row (raw JSON text again), the visitor's row, and the COPY text.
 * Measured on the simulator's feedback and survey items (about 700 bytes of JSON each).
 */
export const HELD_PER_JSON_BYTE = 6;
/** Items of a window whose JSON text is measured; their mean stands for the rest. */
const SAMPLE = 32;

/** The JSON text size of `items`, estimated from an even sample of them. */
export function approxJsonBytes(items: readonly unknown[]): number {
  if (items.length === 0) return 0;
  const step = Math.max(1, Math.floor(items.length / SAMPLE));
  let sampled = 0;
  let bytes = 0;
  for (let i = 0; i < items.length; i += step) {
    bytes += JSON.stringify(items[i] ?? null)?.length ?? 4;
    sampled += 1;
  }
  return Math.ceil((bytes / sampled) * items.length);
}

/**
 * The default budget: a share of the heap V8 was given (INSIGHTS_MAX_HEAP_MB), so what the design
 * admits sits well below the limit: the rest is the process's own (modules, pools, the logger)
 * and the garbage a collector has not yet reclaimed. At most MAX_BUDGET without a limit.
 */
export function defaultWindowBudget(heapLimit = getHeapStatistics().heap_size_limit): number {
  return Math.min(Math.floor(heapLimit * BUDGET_SHARE), MAX_BUDGET);
}
const BUDGET_SHARE = 0.4;
const MAX_BUDGET = 256 * 1024 * 1024;

/** @param budget bytes the windows in flight may hold together. */
export function windowMemory(budget: number): WindowMemory {
  let held = 0;
  /** Admitted windows not waiting in holds(): while none is left, nothing would free bytes. */
  let running = 0;
  const learned = new Map<string, number>();
  /** Keys whose first window is out learning the size: the others of the key wait here. */
  const scouting = new Map<string, (() => void)[]>();
  const waiting: { bytes: number; go: () => void; growth: boolean }[] = [];
  const fits = (bytes: number) => running === 0 || held + bytes <= budget;
  const wake = () => {
    for (let next = waiting[0]; next !== undefined && fits(next.bytes); next = waiting[0]) {
      waiting.shift();
      held += next.bytes;
      running += 1;
      next.go();
    }
  };
  // In arrival order, a window's growth before new windows: a large window is not overtaken
  // forever by small ones, and one that holds its answers already goes on first.
  const take = (bytes: number, growth: boolean) =>
    new Promise<void>((go) => {
      const at = growth ? waiting.filter((w) => w.growth).length : waiting.length;
      waiting.splice(at, 0, { bytes, go, growth });
      wake();
    });
  /** The scout of `key` is done: its size is known, or (it failed first) the next one scouts. */
  const scouted = (key: string) => {
    const others = scouting.get(key) ?? [];
    if (learned.has(key)) {
      scouting.delete(key);
      for (const go of others) go();
    } else if (others.length === 0) scouting.delete(key);
    else others.shift()?.();
  };
  const lease = (key: string, reserved: number, scout: boolean): WindowLease => {
    let released = false;
    return {
      async holds(bytes) {
        if (released) return;
        learned.set(key, Math.max(learned.get(key) ?? 0, bytes));
        if (scout) scouted(key);
        const more = bytes - reserved;
        if (more <= 0) return;
        running -= 1;
        await take(more, true);
        reserved = bytes;
      },
      release() {
        if (released) return;
        released = true;
        running -= 1;
        held -= reserved;
        if (scout) scouted(key);
        wake();
      },
    };
  };
  return {
    async admit(key) {
      if (!learned.has(key)) {
        const others = scouting.get(key);
        if (others === undefined) scouting.set(key, []);
        else await new Promise<void>((go) => others.push(go));
        // The first window of the key (or the next, when the first failed): nothing to go by yet.
        if (!learned.has(key)) {
          running += 1;
          return lease(key, 0, true);
        }
      }
      const estimate = learned.get(key) ?? 0;
      await take(estimate, false);
      return lease(key, estimate, false);
    },
  };
}
