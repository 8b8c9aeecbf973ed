import { describe, expect, it } from 'vitest';
import { createWriteGate } from '../../src/db/write-gate.js';

/** A write that runs until `finish` is called (or `fail`), and says whether it has started. */
function heldWrite() {
  let finish!: (value: string) => void;
  let fail!: (error: Error) => void;
  const result = new Promise<string>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const write = {
    started: false,
    finish,
    fail,
    run: () => {
      write.started = true;
      return result;
    },
  };
  return write;
}

/** Lets the gate's promise chains run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('the write gate', () => {
  it('lets writes go together while their rows fit, and holds the next until rows are freed', async () => {
    const gate = createWriteGate(20_000);
    const [a, b, c] = [heldWrite(), heldWrite(), heldWrite()];
    const done = [gate.run(8_000, a.run), gate.run(8_000, b.run), gate.run(8_000, c.run)];
    await settle();
    expect([a.started, b.started, c.started]).toEqual([true, true, false]);
    expect(gate.stats()).toEqual({ writing: 2, rows: 16_000, waiting: 1 });
    a.finish('a');
    await settle();
    expect(c.started).toBe(true);
    b.finish('b');
    c.finish('c');
    expect(await Promise.all(done)).toEqual(['a', 'b', 'c']);
    expect(gate.stats()).toEqual({ writing: 0, rows: 0, waiting: 0 });
  });

  it('lets small writes go many at once', async () => {
    const gate = createWriteGate(20_000);
    const writes = Array.from({ length: 12 }, () => heldWrite());
    const done = writes.map((w) => gate.run(100, w.run));
    await settle();
    expect(writes.every((w) => w.started)).toBe(true);
    for (const w of writes) w.finish('ok');
    await Promise.all(done);
  });

  it('lets a write larger than the gate go alone, never refused', async () => {
    const gate = createWriteGate(20_000);
    const [small, large, after] = [heldWrite(), heldWrite(), heldWrite()];
    const done = [gate.run(10, small.run), gate.run(30_000, large.run), gate.run(10, after.run)];
    await settle();
    expect([small.started, large.started, after.started]).toEqual([true, false, false]);
    small.finish('small');
    await settle();
    // Alone: the small write behind it waits although 10 rows would fit beside nothing else.
    expect([large.started, after.started]).toEqual([true, false]);
    large.finish('large');
    await settle();
    expect(after.started).toBe(true);
    after.finish('after');
    expect(await Promise.all(done)).toEqual(['small', 'large', 'after']);
  });

  it('keeps arrival order: a waiting write is not overtaken by a smaller one that would fit', async () => {
    const gate = createWriteGate(20_000);
    const [first, big, small] = [heldWrite(), heldWrite(), heldWrite()];
    const done = [gate.run(15_000, first.run), gate.run(10_000, big.run), gate.run(1_000, small.run)];
    await settle();
    expect([first.started, big.started, small.started]).toEqual([true, false, false]);
    first.finish('first');
    await settle();
    expect([big.started, small.started]).toEqual([true, true]);
    big.finish('big');
    small.finish('small');
    await Promise.all(done);
  });

  it('frees the rows of a failed write, and its error reaches its caller', async () => {
    const gate = createWriteGate(20_000);
    const [failing, next] = [heldWrite(), heldWrite()];
    const failed = gate.run(20_000, failing.run);
    const after = gate.run(20_000, next.run);
    await settle();
    expect(next.started).toBe(false);
    failing.fail(new Error('refused'));
    await expect(failed).rejects.toThrow('refused');
    await settle();
    expect(next.started).toBe(true);
    next.finish('next');
    expect(await after).toBe('next');
    expect(gate.stats()).toEqual({ writing: 0, rows: 0, waiting: 0 });
  });

  it('counts a write that throws before it returns a promise as ended', async () => {
    const gate = createWriteGate(10);
    await expect(
      gate.run(10, () => {
        throw new Error('at once');
      }),
    ).rejects.toThrow('at once');
    expect(gate.stats()).toEqual({ writing: 0, rows: 0, waiting: 0 });
  });
});
