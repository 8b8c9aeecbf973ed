/**
 * Time as the scheduler sees it. Passed in, so a test crosses a daylight-saving change and a week
 * of nights in milliseconds instead of sleeping through them.
 */
export interface Clock {
  now(): Date;
  /** Calls `fn` once after `ms`; returns a function that cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

export const systemClock: Clock = {
  now: () => new Date(),
  setTimer(fn, ms) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};
