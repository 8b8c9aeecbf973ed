import { describe, expect, it } from 'vitest';
import { NEIGHBOURS_MOST, NeighboursStored, RecentNeighbours } from '../../src/sync/neighbours-stored.js';

const item = (id: number, comment = 'ok') => ({ id, dt: '2026-03-10T10:00:00.000Z', comment });

describe("a run's memory of the neighbouring days' items its windows stored", () => {
  it('sends an item again only until a window stored it, and an item changed since as a new one', () => {
    const memory = new NeighboursStored();
    const first = memory.fresh('feedback', [item(1), item(2)]);
    expect(first.items).toEqual([item(1), item(2)]);
    // Not stored yet (the window failed, or is still storing): sent again.
    expect(memory.fresh('feedback', [item(1)]).items).toEqual([item(1)]);
    memory.remember('feedback', first.identities);
    expect(memory.fresh('feedback', [item(1), item(2), item(3)]).items).toEqual([item(3)]);
    expect(memory.fresh('feedback', [item(2, 'edited')]).items).toEqual([item(2, 'edited')]);
  });

  it('keeps each resource apart', () => {
    const memory = new NeighboursStored();
    memory.remember('feedback', memory.fresh('feedback', [item(1)]).identities);
    expect(memory.fresh('survey', [item(1)]).items).toEqual([item(1)]);
  });

  it('remembers at most NEIGHBOURS_MOST items a resource: past them, items are sent as before', () => {
    const memory = new NeighboursStored();
    const many = Array.from({ length: NEIGHBOURS_MOST + 10 }, (_, i) => item(i));
    memory.remember('feedback', memory.fresh('feedback', many).identities);
    expect(memory.fresh('feedback', many).items).toEqual(many.slice(NEIGHBOURS_MOST));
  });

  it("a worker keeps the recent runs' and sources' memories, letting go of the least recently used", () => {
    const recent = new RecentNeighbours();
    const kept = recent.of(1, 'shop');
    expect(recent.of(1, 'shop')).toBe(kept);
    expect(recent.of(1, 'blog')).not.toBe(kept);
    for (let run = 2; run < 40; run++) recent.of(run, 'shop');
    expect(recent.of(1, 'shop')).not.toBe(kept);
  });
});
