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
 * - Before each request, a window reserves what it will hold once the answer is in: its answers
 *   so far and a full answer of the limit asked, at the largest size per item seen of its key.
 *   An answer is held before anything of it can be measured, so the bound is taken before the
 *   request: a scout escalating to 10,000 items waits like any other window.
 * - Once its answers are in, a window reserves what it will hold while it validates and loads
 *   them (more, or less: what a cut day asked twice is held once).
 * - When every window in flight waits, the one that holds the most goes on (then the first to
 *   ask): a day larger than the budget still loads, alone, and no two windows go past the budget
 *   at once: the one that went on keeps going on until it is done.
 */
export interface WindowMemory {
  /** Waits until a window of `key` ("source/resource") may start. */
  admit(key: string): Promise<WindowLease>;
}

export interface WindowLease {
  /** A request for at most `limit` items is about to go: waits until its answer fits. */
  asks(limit: number): Promise<void>;
  /** A request's answer is in (what it holds per item teaches the key's size). */
  answered(items: readonly unknown[]): void;
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

/** JSON text per item assumed before any answer of a key is in (the simulator's are 400-800). */
export const DEFAULT_ITEM_BYTES = 1024;

/**
 * What a window will hold once the answer to a request of `limit` items is in: what it has been
 * answered so far (repeats included: an upper bound) and a full answer, per byte of JSON text.
 */
export function requestBound(answeredJsonBytes: number, limit: number, itemBytes: number): number {
  return HELD_PER_JSON_BYTE * (answeredJsonBytes + limit * itemBytes);
}

interface Waiter {
  bytes: number;
  go: () => void;
  growth: boolean;
  /** What the waiting window holds already (0 for a window not admitted yet). */
  holding: number;
}

/** The bytes of the windows in flight, and the windows waiting for some. */
interface Ledger {
  /** Bytes the windows in flight may hold together. */
  budget: number;
  held: number;
  /** Admitted windows not waiting to grow: while none is left, nothing would free bytes. */
  running: number;
  learned: Map<string, number>;
  /** The largest JSON text per item an answer of each key held. */
  itemBytes: Map<string, number>;
  /** Keys whose first window is out learning the size: the others of the key wait here. */
  scouting: Map<string, (() => void)[]>;
  waiting: Waiter[];
}

/** @param budget bytes the windows in flight may hold together. */
export function windowMemory(budget: number): WindowMemory {
  const ledger: Ledger = {
    budget,
    held: 0,
    running: 0,
    learned: new Map(),
    itemBytes: new Map(),
    scouting: new Map(),
    waiting: [],
  };
  return { admit: (key) => admit(ledger, key) };
}

async function admit(ledger: Ledger, key: string): Promise<WindowLease> {
  if (!ledger.learned.has(key)) {
    const others = ledger.scouting.get(key);
    if (others === undefined) ledger.scouting.set(key, []);
    else await new Promise<void>((go) => others.push(go));
    // The first window of the key (or the next, when the first failed): nothing to go by yet.
    if (!ledger.learned.has(key)) {
      ledger.running += 1;
      return lease(ledger, key, 0, true);
    }
  }
  const estimate = ledger.learned.get(key) ?? 0;
  await take(ledger, estimate, false, 0);
  return lease(ledger, key, estimate, false);
}

/**
 * Which waiting window goes on now, if any: the first in line while it fits the budget. When it
 * does not and nothing in flight would free bytes, the window holding the most goes on, alone
 * past the budget; it is the one chosen again each time it waits, until it is done.
 */
export function nextToGo(
  waiting: readonly Pick<Waiter, 'bytes' | 'holding'>[],
  held: number,
  budget: number,
  running: number,
): number | undefined {
  const head = waiting[0];
  if (head === undefined) return undefined;
  if (held + head.bytes <= budget) return 0;
  if (running > 0) return undefined;
  let most = 0;
  waiting.forEach((w, i) => {
    if (w.holding > (waiting[most]?.holding ?? 0)) most = i;
  });
  return most;
}

/**
 * Where a window waits: in arrival order, a window's growth before new windows: a large window
 * is not overtaken forever by small ones, and one that holds its answers already goes on first.
 */
export function placeInLine(waiting: readonly Pick<Waiter, 'growth'>[], growth: boolean): number {
  return growth ? waiting.filter((w) => w.growth).length : waiting.length;
}

function wake(ledger: Ledger): void {
  for (
    let next = nextToGo(ledger.waiting, ledger.held, ledger.budget, ledger.running);
    next !== undefined;
    next = nextToGo(ledger.waiting, ledger.held, ledger.budget, ledger.running)
  ) {
    const [waiter] = ledger.waiting.splice(next, 1);
    if (waiter === undefined) return;
    ledger.held += waiter.bytes;
    ledger.running += 1;
    waiter.go();
  }
}

function take(ledger: Ledger, bytes: number, growth: boolean, holding: number): Promise<void> {
  return new Promise<void>((go) => {
    ledger.waiting.splice(placeInLine(ledger.waiting, growth), 0, { bytes, go, growth, holding });
    wake(ledger);
  });
}

/** The scout of `key` is done: its size is known, or (it failed first) the next one scouts. */
function scouted(ledger: Ledger, key: string): void {
  const others = ledger.scouting.get(key) ?? [];
  if (ledger.learned.has(key)) {
    ledger.scouting.delete(key);
    for (const go of others) go();
  } else if (others.length === 0) ledger.scouting.delete(key);
  else others.shift()?.();
}

function lease(ledger: Ledger, key: string, reserved: number, scout: boolean): WindowLease {
  let released = false;
  let answeredBytes = 0;
  /** Reserves `bytes` in all, waiting if more does not fit now. */
  const reserve = async (bytes: number) => {
    const more = bytes - reserved;
    if (more <= 0) return;
    ledger.running -= 1;
    await take(ledger, more, true, reserved);
    reserved = bytes;
  };
  return {
    async asks(limit) {
      if (released) return;
      await reserve(requestBound(answeredBytes, limit, ledger.itemBytes.get(key) ?? DEFAULT_ITEM_BYTES));
    },
    answered(items) {
      if (released || items.length === 0) return;
      const bytes = approxJsonBytes(items);
      answeredBytes += bytes;
      ledger.itemBytes.set(key, Math.max(ledger.itemBytes.get(key) ?? 0, bytes / items.length));
    },
    async holds(bytes) {
      if (released) return;
      ledger.learned.set(key, Math.max(ledger.learned.get(key) ?? 0, bytes));
      if (scout) scouted(ledger, key);
      if (bytes < reserved) {
        // Less than the requests reserved: the rest is free for others now.
        ledger.held -= reserved - bytes;
        reserved = bytes;
        wake(ledger);
        return;
      }
      await reserve(bytes);
    },
    release() {
      if (released) return;
      released = true;
      ledger.running -= 1;
      ledger.held -= reserved;
      if (scout) scouted(ledger, key);
      wake(ledger);
    },
  };
}
