import { createRandom, hashSeed } from './random.js';

/** Mean items per day; a day's real count varies around it (empty, quiet, ordinary, busy days). */
export interface Volume {
  feedbackPerDay: number;
  surveyPerDay: number;
  recordingsPerDay: number;
  /** Feedback on the busy day; above the default cap (1000) so a client must split that day. */
  busyDayFeedback: number;
}

export const DEFAULT_VOLUME: Volume = {
  feedbackPerDay: 8,
  surveyPerDay: 6,
  recordingsPerDay: 5,
  busyDayFeedback: 1500,
};

/** Below ID_DAY_STRIDE (item-builders.ts), leaving room for the late items advance() adds. */
export const MAX_ITEMS_PER_DAY = 40_000;

export type DayRole = 'busy' | 'empty' | 'ordinary';

export interface DayPlan {
  feedback: number;
  survey: number;
  recordings: number;
}

/** How many items a day has; drawn from (seed, day) alone. */
export function planDay(seed: number, day: string, role: DayRole, volume: Volume): DayPlan {
  if (role === 'empty') return { feedback: 0, survey: 0, recordings: 0 };
  const rng = createRandom(hashSeed(seed, 'plan', day));
  const count = (mean: number, factor: number): number =>
    Math.min(MAX_ITEMS_PER_DAY, Math.round(mean * factor * (0.8 + 0.4 * rng.next())));
  if (role === 'busy') {
    return {
      feedback: Math.min(MAX_ITEMS_PER_DAY, Math.max(volume.busyDayFeedback, volume.feedbackPerDay * 3)),
      survey: count(volume.surveyPerDay, 3),
      recordings: count(volume.recordingsPerDay, 3),
    };
  }
  const roll = rng.next();
  // About 7% of days have nothing at all, 13% are busy, 20% quiet.
  if (roll < 0.07) return { feedback: 0, survey: 0, recordings: 0 };
  const factor =
    roll < 0.2 ? 2 + rng.next() * 1.5 : roll < 0.4 ? 0.2 + rng.next() * 0.4 : 0.6 + rng.next() * 0.8;
  return {
    feedback: count(volume.feedbackPerDay, factor),
    survey: count(volume.surveyPerDay, factor),
    recordings: count(volume.recordingsPerDay, factor),
  };
}
