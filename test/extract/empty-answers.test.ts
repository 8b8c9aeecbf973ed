import { describe, expect, it } from 'vitest';
import {
  afterAnswer,
  DEFAULT_EMPTY_REASK,
  EmptyAnswerError,
  emptyReaskPolicy,
  readNotEmpty,
} from '../../src/extract/empty-answers.js';

const POLICY = emptyReaskPolicy({ maxAttempts: 4, retryBaseMs: 100, retryMaxMs: 250 });

describe('afterAnswer: when an empty snapshot answer is believed', () => {
  it('accepts any answer with items at once', () => {
    expect(afterAnswer(1, 3, POLICY)).toEqual({ action: 'accept' });
  });

  it('asks an empty answer again, the wait doubling up to the cap, until the asks run out', () => {
    expect([1, 2, 3, 4].map((asked) => afterAnswer(asked, 0, POLICY))).toEqual([
      { action: 'reask', delayMs: 100 },
      { action: 'reask', delayMs: 200 },
      { action: 'reask', delayMs: 250 },
      { action: 'accept' },
    ]);
  });

  it('gives an empty answer the chances a failed request gets: 5 asks, 500 ms doubling, by default', () => {
    expect(DEFAULT_EMPTY_REASK).toEqual({ asks: 5, baseDelayMs: 500, maxDelayMs: 30_000 });
    expect(emptyReaskPolicy({ maxAttempts: 0, retryBaseMs: -1, retryMaxMs: -1 })).toEqual({
      asks: 1,
      baseDelayMs: 0,
      maxDelayMs: 0,
    });
  });
});

describe('readNotEmpty', () => {
  /** A read that answers the given lists in turn, and the waits it was made to sit through. */
  const scripted = (answers: unknown[][]) => {
    const waits: number[] = [];
    let calls = 0;
    return {
      read: async () => answers[calls++] ?? [],
      sleep: async (ms: number) => {
        waits.push(ms);
      },
      waits,
      calls: () => calls,
    };
  };

  it('reads again after empty answers and returns the first one with items, counting the re-asks', async () => {
    const s = scripted([[], [], [{ id: 'a' }]]);
    const read = await readNotEmpty(s.read, {
      policy: POLICY,
      sleep: s.sleep,
      emptyIsTrue: true,
      what: 'list',
    });
    expect(read).toEqual({ items: [{ id: 'a' }], reasked: 2, fetched: 1 });
    expect(s.waits).toEqual([100, 200]);
  });

  it('believes a list empty on every ask', async () => {
    const s = scripted([]);
    const read = await readNotEmpty(s.read, {
      policy: POLICY,
      sleep: s.sleep,
      emptyIsTrue: true,
      what: 'list',
    });
    expect(read).toEqual({ items: [], reasked: 3, fetched: 0 });
    expect(s.calls()).toBe(4);
  });

  it("never believes a test's results empty on every ask", async () => {
    const s = scripted([]);
    const reading = readNotEmpty(s.read, {
      policy: POLICY,
      sleep: s.sleep,
      emptyIsTrue: false,
      what: 'the results of abtesting test 7',
    });
    await expect(reading).rejects.toThrow(EmptyAnswerError);
    await expect(reading).rejects.toThrow(
      'the results of abtesting test 7 answered an empty list on all 4 asks',
    );
    await expect(reading).rejects.toMatchObject({ reasked: 3 });
  });

  it('stops asking when the run is shut down', async () => {
    const s = scripted([]);
    const stop = new AbortController();
    const reading = readNotEmpty(s.read, {
      policy: POLICY,
      sleep: async () => stop.abort(),
      signal: stop.signal,
      emptyIsTrue: true,
      what: 'list',
    });
    await expect(reading).rejects.toMatchObject({ name: 'AbortError' });
    expect(s.calls()).toBe(1);
  });
});
