import type { Feedback } from '../schemas/feedback.js';
import type { Recording } from '../schemas/recording.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { Visitor } from '../schemas/visitor.js';
import { DAY_MS, epochDay } from '../time/days.js';
import type { Random } from './random.js';
import {
  AGENTS,
  FEEDBACK_COMMENTS,
  FEEDBACK_FORMS,
  PAGE_URLS,
  PLACES,
  RATING_TEXTS,
  REFERRERS,
  SURVEY_QUESTIONS,
} from './vocabulary.js';

// Builders of single windowed items, shared by the day generator and by advance().

/**
 * Integer ids are `epochDay * ID_DAY_STRIDE + counter`: unique without knowing earlier days (so a
 * day can be generated alone) and below 2^31 until 2087, so they fit a 32-bit integer column.
 */
export const ID_DAY_STRIDE = 50_000;

export interface ItemContext {
  seed: number;
  visitors: readonly Visitor[];
}

/** What every item of a day derives from its date; computed once per day, not per item. */
export interface DayStamp {
  day: string;
  /** First integer id of the day. */
  idBase: number;
  /** The date without dashes, for recording ids. */
  compact: string;
}

export function dayStamp(day: string): DayStamp {
  return { day, idBase: epochDay(day) * ID_DAY_STRIDE, compact: day.replaceAll('-', '') };
}

/** A random millisecond of the day, for items added one at a time. */
export function randomOffset(rng: Random): number {
  return Math.floor(rng.next() * DAY_MS);
}

const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));

/** The instant `offsetMs` into the day in the spec's shape; built by hand because toISOString is the hot spot. */
function timeOnDay(stamp: DayStamp, offsetMs: number): string {
  let rest = offsetMs;
  const millis = rest % 1000;
  rest = (rest - millis) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  return `${stamp.day}T${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${String(millis).padStart(3, '0')}Z`;
}

function session(rng: Random): string {
  return `s-${Math.floor(rng.next() * 0xffffffff)
    .toString(16)
    .padStart(8, '0')}`;
}

/** One feedback item; `counter` numbers the items of one form on one day. */
export function buildFeedback(
  rng: Random,
  context: ItemContext,
  stamp: DayStamp,
  form: number,
  counter: number,
  offsetMs: number,
): Feedback {
  const { feedbackId, question } = FEEDBACK_FORMS[form] ?? FEEDBACK_FORMS[0];
  const id = stamp.idBase + counter;
  const { rating, ratingText } = feedbackRating(rng, feedbackId);
  return {
    id,
    feedback_id: feedbackId,
    question,
    session: session(rng),
    comment: rng.pick(FEEDBACK_COMMENTS),
    rating,
    rating_text: ratingText,
    dt: timeOnDay(stamp, offsetMs),
    url: rng.pick(PAGE_URLS),
    screenshot: `https://cdn.insights.example/screenshots/${feedbackId}/${id}.png`,
    visitor: rng.pick(context.visitors),
  };
}

/** Form 103 is a 0-10 recommendation score; the other forms use a 1-5 scale with labels. */
export function feedbackRating(rng: Random, feedbackId: number): { rating: number; ratingText: string } {
  if (feedbackId === 103) {
    const rating = rng.int(0, 10);
    return { rating, ratingText: rating >= 9 ? 'Promoter' : rating >= 7 ? 'Passive' : 'Detractor' };
  }
  const rating = rng.int(1, 5);
  return { rating, ratingText: RATING_TEXTS[rating - 1] as string };
}

/** One survey response: `count` consecutive questions, all under one id, session, dt and visitor. */
export function buildSurveyResponse(
  rng: Random,
  context: ItemContext,
  stamp: DayStamp,
  response: number,
  count: number,
  offsetMs: number,
): SurveyAnswer[] {
  const id = stamp.idBase + response;
  const first = rng.int(0, SURVEY_QUESTIONS.length - count);
  const shared = {
    session: session(rng),
    dt: timeOnDay(stamp, offsetMs),
    url: rng.pick(PAGE_URLS),
    visitor: rng.pick(context.visitors),
  };
  const answers: SurveyAnswer[] = [];
  for (let q = first; q < first + count; q++) {
    const { questionId, question, answers: choices } = SURVEY_QUESTIONS[q] ?? SURVEY_QUESTIONS[0];
    answers.push({
      id,
      question_id: questionId,
      question,
      session: shared.session,
      comment: rng.pick(choices),
      dt: shared.dt,
      url: shared.url,
      visitor: shared.visitor,
    });
  }
  return answers;
}

export function buildRecording(rng: Random, stamp: DayStamp, counter: number, offsetMs: number): Recording {
  const id = `rec-${stamp.compact}-${String(counter).padStart(5, '0')}`;
  const place = rng.pick(PLACES);
  return {
    id,
    duration: rng.int(3, 1800),
    landing_page: rng.pick(PAGE_URLS),
    referral: rng.chance(0.3) ? '' : rng.pick(REFERRERS),
    country: place.country,
    city: place.city,
    user_ip: `198.51.100.${rng.int(1, 254)}`,
    user_agent: rng.pick(AGENTS).userAgent,
    dt: timeOnDay(stamp, offsetMs),
    video_link: `https://app.insights.example/recordings/${id}`,
  };
}
