import type { Feedback } from '../schemas/feedback.js';
import type { Recording } from '../schemas/recording.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import { DAY_MS } from '../time/days.js';
import type { DayPlan } from './day-plan.js';
import {
  buildFeedback,
  buildRecording,
  buildSurveyResponse,
  dayStamp,
  type ItemContext,
} from './item-builders.js';
import { createRandom, hashSeed, type Random } from './random.js';
import { FEEDBACK_FORMS } from './vocabulary.js';

/** The windowed items of one UTC day, each list oldest-first (dt, then id). */
export interface DayItems {
  feedback: Feedback[];
  survey: SurveyAnswer[];
  recordings: Recording[];
}

export function generateDay(context: ItemContext, day: string, plan: DayPlan): DayItems {
  const stamp = dayStamp(day);
  const items: DayItems = { feedback: [], survey: [], recordings: [] };
  // Times are drawn first and sorted, and ids handed out in that order (as a service numbering
  // arrivals would), so each list comes out already in (dt, id) order without sorting objects.
  if (plan.feedback > 0) {
    const rng = createRandom(hashSeed(context.seed, 'feedback', day));
    const times = sortedOffsets(rng, plan.feedback);
    const counters = FEEDBACK_FORMS.map(() => 0);
    for (const offset of times) {
      const form = rng.int(0, FEEDBACK_FORMS.length - 1);
      const counter = counters[form] ?? 0;
      counters[form] = counter + 1;
      items.feedback.push(buildFeedback(rng, context, stamp, form, counter, offset));
    }
    // Two items in the same millisecond from different forms can break id order; rare, so check.
    if (!isSorted(items.feedback, compareFeedback)) items.feedback.sort(compareFeedback);
  }
  if (plan.survey > 0) {
    const rng = createRandom(hashSeed(context.seed, 'survey', day));
    // Sizes first: a response answers 1 to 3 questions, and the day has plan.survey answers.
    const sizes: number[] = [];
    for (let answers = 0; answers < plan.survey; ) {
      const size = Math.min(plan.survey - answers, rng.pick([1, 1, 2, 3]));
      sizes.push(size);
      answers += size;
    }
    const times = sortedOffsets(rng, sizes.length);
    sizes.forEach((size, response) => {
      items.survey.push(...buildSurveyResponse(rng, context, stamp, response, size, times[response] ?? 0));
    });
  }
  if (plan.recordings > 0) {
    const rng = createRandom(hashSeed(context.seed, 'recordings', day));
    const times = sortedOffsets(rng, plan.recordings);
    times.forEach((offset, i) => {
      items.recordings.push(buildRecording(rng, stamp, i, offset));
    });
  }
  return items;
}

/** `count` random millisecond offsets into a day, ascending. */
function sortedOffsets(rng: Random, count: number): Float64Array {
  const times = new Float64Array(count);
  for (let i = 0; i < count; i++) times[i] = Math.floor(rng.next() * DAY_MS);
  return times.sort();
}

function isSorted<T>(items: readonly T[], compare: (a: T, b: T) => number): boolean {
  for (let i = 1; i < items.length; i++) {
    if (compare(items[i - 1] as T, items[i] as T) > 0) return false;
  }
  return true;
}

export function sortDayItems(items: DayItems): DayItems {
  items.feedback.sort(compareFeedback);
  items.survey.sort(compareSurvey);
  items.recordings.sort(compareRecording);
  return items;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareFeedback(a: Feedback, b: Feedback): number {
  return compareText(a.dt, b.dt) || a.id - b.id || a.feedback_id - b.feedback_id;
}

function compareSurvey(a: SurveyAnswer, b: SurveyAnswer): number {
  return compareText(a.dt, b.dt) || a.id - b.id || a.question_id - b.question_id;
}

function compareRecording(a: Recording, b: Recording): number {
  return compareText(a.dt, b.dt) || compareText(a.id, b.id);
}
