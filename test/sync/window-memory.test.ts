import { describe, expect, it } from 'vitest';
import {
  approxJsonBytes,
  DEFAULT_ITEM_BYTES,
  defaultWindowBudget,
  HELD_PER_JSON_BYTE,
  nextToGo,
  placeInLine,
  requestBound,
  type WindowLease,
  windowMemory,
} from '../../src/sync/window-memory.js';

const MB = 1024 * 1024;

/** Admits `key`, and records the lease once admitted (a pending admission stays undefined). */
function admitted(memory: ReturnType<typeof windowMemory>, key: string) {
  const state: { lease?: WindowLease } = {};
  const done = memory.admit(key).then((lease) => {
    state.lease = lease;
    return lease;
  });
  return { state, done };
}

/** Lets every settled promise run its callbacks. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('windows go on while what they hold fits the byte budget', () => {
  it('the first window of a key goes at once, holding nothing; the others of the key wait for its size', async () => {
    const memory = windowMemory(40 * MB);
    const scout = await memory.admit('s/feedback');
    const second = admitted(memory, 's/feedback');
    // Another key is not held up by a scout still waiting for its answers (a 429 storm, say).
    const other = admitted(memory, 't/feedback');
    await settle();
    expect(second.state.lease).toBeUndefined();
    expect(other.state.lease).toBeDefined();
    await scout.holds(15 * MB);
    await second.done;
    // Estimated at 15 MB: the 15 MB of the first and the second fit, a third does not.
    const third = admitted(memory, 's/feedback');
    await settle();
    expect(third.state.lease).toBeUndefined();
    scout.release();
    await third.done;
  });

  it('a window whose answers do not fit waits with them before it goes on', async () => {
    const memory = windowMemory(40 * MB);
    const a = await memory.admit('s/feedback');
    const b = await memory.admit('s/survey');
    await a.holds(30 * MB);
    let bGoesOn = false;
    const grown = b.holds(30 * MB).then(() => {
      bGoesOn = true;
    });
    await settle();
    expect(bGoesOn).toBe(false);
    a.release();
    await grown;
  });

  it('when every window in flight waits, the one holding the most goes on, until it is done', async () => {
    const memory = windowMemory(40 * MB);
    const a = await memory.admit('s/feedback');
    const b = await memory.admit('s/survey');
    await a.holds(10 * MB);
    let bGoesOn = false;
    const bHolds = b.holds(35 * MB).then(() => {
      bGoesOn = true;
    });
    await settle();
    // b waits for a; then a needs more than the budget and waits too. Nothing would free bytes
    // now: a, which holds 10 MB where b holds nothing yet, goes on past the budget, alone.
    await a.holds(100 * MB);
    // It waits again for its next request: it goes on again, b does not join it past the budget.
    await a.asks(10_000);
    await settle();
    expect(bGoesOn).toBe(false);
    a.release();
    await bHolds;
    b.release();
  });

  it('a scout that fails before its answers hands the scouting to the next window of its key', async () => {
    const memory = windowMemory(40 * MB);
    const scout = await memory.admit('s/recordings');
    const next = admitted(memory, 's/recordings');
    await settle();
    expect(next.state.lease).toBeUndefined();
    scout.release();
    const lease = await next.done;
    // It scouts in turn: nothing reserved, and the one after it waits for its size.
    const after = admitted(memory, 's/recordings');
    await settle();
    expect(after.state.lease).toBeUndefined();
    await lease.holds(1 * MB);
    await after.done;
  });

  it('new windows wait in arrival order, and a release counts once', async () => {
    const memory = windowMemory(40 * MB);
    const learn = await memory.admit('s/feedback');
    await learn.holds(15 * MB);
    learn.release();
    const windows = [0, 1, 2, 3].map(() => admitted(memory, 's/feedback'));
    await settle();
    expect(windows.map((w) => w.state.lease !== undefined)).toEqual([true, true, false, false]);
    windows[0]?.state.lease?.release();
    await settle();
    expect(windows.map((w) => w.state.lease !== undefined)).toEqual([true, true, true, false]);
    windows[0]?.state.lease?.release();
    await settle();
    expect(windows[3]?.state.lease).toBeUndefined();
  });
});

describe('each request reserves its answer before it goes', () => {
  it("a scout's request waits while a full answer of its limit does not fit", async () => {
    const memory = windowMemory(40 * MB);
    const big = await memory.admit('s/survey');
    await big.holds(30 * MB);
    const scout = await memory.admit('s/feedback');
    // 1,000 items at the assumed size per item: 6 MB, which fits next to the 30 MB.
    await scout.asks(1000);
    expect(requestBound(0, 1000, DEFAULT_ITEM_BYTES)).toBeLessThanOrEqual(10 * MB);
    // 10,000 do not: the request waits until the other window is done.
    let asked = false;
    const ask = scout.asks(10_000).then(() => {
      asked = true;
    });
    await settle();
    expect(asked).toBe(false);
    big.release();
    await ask;
    scout.release();
  });

  it("a request's bound counts the answers so far at the size per item they taught", async () => {
    expect(requestBound(2_000_000, 4000, 500)).toBe(HELD_PER_JSON_BYTE * 4_000_000);
    const memory = windowMemory(40 * MB);
    const big = await memory.admit('s/survey');
    await big.holds(30 * MB);
    const scout = await memory.admit('s/feedback');
    await scout.asks(1000);
    // Items of about 100 bytes: 10,000 more of them are 6 MB with what came, which fits.
    scout.answered(Array.from({ length: 1000 }, (_, i) => ({ id: i, text: 'x'.repeat(80) })));
    await scout.asks(10_000);
    big.release();
    scout.release();
  });

  it('what a window holds once its answers are in may be less than its requests reserved', async () => {
    const memory = windowMemory(40 * MB);
    const a = await memory.admit('s/feedback');
    // Alone, so past the budget: a day of 10,000 items at the assumed size.
    await a.asks(10_000);
    const b = admitted(memory, 's/survey');
    await settle();
    // b scouts: it goes at once with nothing reserved, but its request waits for a.
    const bLease = await b.done;
    let asked = false;
    const ask = bLease.asks(1000).then(() => {
      asked = true;
    });
    await settle();
    expect(asked).toBe(false);
    // Repeats dropped: a holds far less than it reserved, and the rest is free at once.
    await a.holds(5 * MB);
    await ask;
    a.release();
    bLease.release();
  });
});

describe('sizes', () => {
  it('the JSON text of items, from a sample', () => {
    const items = Array.from({ length: 1000 }, (_, i) => ({ id: i % 10, text: 'x'.repeat(90) }));
    const exact = items.reduce((sum, item) => sum + JSON.stringify(item).length, 0);
    expect(approxJsonBytes(items)).toBe(exact);
    expect(approxJsonBytes([])).toBe(0);
  });

  it('the default budget is a share of the heap limit, bounded without one', () => {
    expect(defaultWindowBudget(100 * MB)).toBe(40 * MB);
    expect(defaultWindowBudget(4096 * MB)).toBe(256 * MB);
  });
});

describe('who goes on next, decided without waiting', () => {
  it('the first in line, while it fits next to what is held', () => {
    const line = [
      { bytes: 10, holding: 0 },
      { bytes: 1, holding: 0 },
    ];
    expect(nextToGo(line, 30, 40, 1)).toBe(0);
    // The second would fit, but does not overtake the first.
    expect(nextToGo(line, 35, 40, 1)).toBeUndefined();
    expect(nextToGo([], 0, 40, 0)).toBeUndefined();
  });

  it('when nothing in flight would free bytes, the one that holds the most, past the budget', () => {
    const line = [
      { bytes: 50, holding: 0 },
      { bytes: 50, holding: 20 },
      { bytes: 50, holding: 20 },
    ];
    expect(nextToGo(line, 30, 40, 0)).toBe(1);
  });

  it('a window growing waits before every new window, after those growing already', () => {
    const line = [{ growth: true }, { growth: false }, { growth: false }];
    expect(placeInLine(line, true)).toBe(1);
    expect(placeInLine(line, false)).toBe(3);
  });
});
