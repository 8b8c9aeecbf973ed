import { addDays, type DayString } from '../time/days.js';

/**
 * The new watermark after the given days are done: the end of the contiguous run of done days
 * that starts right after the current watermark (or at startDay). Never earlier than the current.
 */
export function contiguousWatermark(
  watermark: DayString | null,
  startDay: DayString,
  isDone: (day: DayString) => boolean,
  today: DayString,
): DayString | null {
  let mark = watermark;
  let next = watermark === null ? startDay : addDays(watermark, 1);
  while (next < today && isDone(next)) {
    mark = next;
    next = addDays(next, 1);
  }
  return mark;
}
