import type { Feedback } from '../schemas/feedback.js';
import type { Recording } from '../schemas/recording.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import { addDays } from '../time/days.js';
import { type DayItems, sortDayItems } from './day-data.js';
import { unitHash } from './random.js';

/**
 * Ids reused across days (spec 2.3-2.5 do not promise a key is unique beyond one answer). On a
 * reuse day, item i of each list takes the key of item i of the previous day as served (id and
 * feedback_id / question_id / recording id, with the fields derived from them), so the same key
 * names a different item with a different dt. Items past the previous day's count keep their own.
 * Applied on top of the dataset (advance() and its edits keep working on the generated ids).
 */
export interface ServedDays {
  /** The items of one UTC day with ids reused when that day is a reuse day. */
  day(day: string): DayItems;
  /** Days of the range whose ids are reused at the current share, in order. */
  reuseDays(): string[];
  /** Forgets remembered days; call after the underlying data changes (advance). */
  clear(): void;
}

interface Source {
  readonly seed: number;
  readonly from: string;
  readonly days: readonly string[];
  day(day: string): DayItems;
}

// Remembered served days; a client walks days in order, so the previous day is usually here.
const MEMO_SIZE = 32;

function isReuseDay(seed: number, from: string, day: string, share: number): boolean {
  // The first day has no previous day with data to reuse from.
  return share > 0 && day > from && unitHash(seed, 'reuse-ids', day) < share;
}

export function createServedDays(source: Source, share: () => number): ServedDays {
  const memo = new Map<string, DayItems>();
  let memoShare = share();
  const reuses = (day: string): boolean => isReuseDay(source.seed, source.from, day, memoShare);
  const remember = (day: string, items: DayItems): DayItems => {
    memo.set(day, items);
    if (memo.size > MEMO_SIZE) memo.delete(memo.keys().next().value as string);
    return items;
  };

  const day = (date: string): DayItems => {
    if (share() !== memoShare) {
      memo.clear();
      memoShare = share();
    }
    if (!reuses(date)) return source.day(date);
    const known = memo.get(date);
    if (known) return known;
    // Walk back (without recursion) to a day whose served items are at hand, then forward.
    const chain = [date];
    let before = addDays(date, -1);
    while (reuses(before) && !memo.has(before)) {
      chain.push(before);
      before = addDays(before, -1);
    }
    let previous = memo.get(before) ?? source.day(before);
    for (const link of chain.reverse()) previous = remember(link, reuseKeys(source.day(link), previous));
    return previous;
  };

  return {
    day,
    reuseDays: () => source.days.filter((date) => isReuseDay(source.seed, source.from, date, share())),
    clear: () => memo.clear(),
  };
}

function byPosition<T>(own: readonly T[], previous: readonly T[], take: (item: T, from: T) => T): T[] {
  return own.map((item, i) => {
    const from = previous[i];
    return from === undefined ? item : take(item, from);
  });
}

function reuseKeys(own: DayItems, previous: DayItems): DayItems {
  // The question text, screenshot and player link follow the key they describe, so a reused key
  // differs in content (comment, dt, visitor...) but not in what the key itself implies.
  return sortDayItems({
    feedback: byPosition<Feedback>(own.feedback, previous.feedback, (item, from) => ({
      ...item,
      id: from.id,
      feedback_id: from.feedback_id,
      question: from.question,
      screenshot: from.screenshot,
    })),
    survey: byPosition<SurveyAnswer>(own.survey, previous.survey, (item, from) => ({
      ...item,
      id: from.id,
      question_id: from.question_id,
      question: from.question,
    })),
    recordings: byPosition<Recording>(own.recordings, previous.recordings, (item, from) => ({
      ...item,
      id: from.id,
      video_link: from.video_link,
    })),
  });
}
