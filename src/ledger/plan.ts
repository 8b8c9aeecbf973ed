import { addDays, type DayString, daysFrom, maxDay } from '../time/days.js';

/** What the planner needs to know about one source and resource. */
export interface PlanInput {
  today: DayString;
  /** Last contiguous done day, or null before the first one. */
  watermark: DayString | null;
  /** Where the contiguous run starts (the first sync's start date, or the first backfill's from). */
  startDay: DayString;
  /** Days already closed (status done) after the watermark. */
  doneDays: ReadonlySet<DayString>;
  lookbackDays: number;
  /** Truncated days that can now be read further (a raised cap or INSIGHTS_MAX_LIMIT). */
  readFurther?: ReadonlySet<DayString>;
}

/**
 * The days a nightly sync fetches:
 * - the `lookbackDays` days before today, and today, whatever the watermark: late items and
 *   edits land there, and one day that keeps failing must not stop them being read;
 * - every day after the watermark through today that is not done yet;
 * - truncated days that can now be read further.
 * Today is always fetched and never done; nothing after today is ever asked for.
 */
export function planSyncDays(input: PlanInput): DayString[] {
  const { today, watermark, startDay, doneDays, lookbackDays } = input;
  // A watermark at or after today means a skewed clock or a hand-edited row: touch nothing.
  if (watermark !== null && watermark >= today) return [];
  const firstOpen = watermark === null ? startDay : addDays(watermark, 1);
  const lookbackFrom = maxDay(startDay, addDays(today, -lookbackDays));
  const days = new Set<DayString>();
  for (const day of daysFrom(firstOpen, today)) if (!doneDays.has(day)) days.add(day);
  for (const day of daysFrom(lookbackFrom, today)) days.add(day);
  for (const day of input.readFurther ?? []) if (day >= startDay && day <= today) days.add(day);
  return [...days].sort();
}

/** A backfill fetches its whole range, whatever is done, but never a day after today. */
export function planBackfillDays(from: DayString, to: DayString, today: DayString): DayString[] {
  return daysFrom(from, to < today ? to : today);
}
