import type { TestKind } from '../schemas/test.js';
import { isoAt } from '../time/days.js';
import { type DatasetState, overlayOf } from './dataset-state.js';
import type { DayItems } from './day-data.js';
import {
  buildFeedback,
  buildRecording,
  buildSurveyResponse,
  dayStamp,
  feedbackRating,
  type ItemContext,
  randomOffset,
} from './item-builders.js';
import { createRandom, hashSeed, type Random } from './random.js';
import { FEEDBACK_FORMS } from './vocabulary.js';

/**
 * advance() plays the passing of time on a live service: items arrive late for days a client has
 * already read, recent feedback is edited, an A/B test is deleted and test results keep growing.
 * A client that re-reads only new days, or never deletes, will miss these.
 */
export interface AdvanceOptions {
  /** Seed of this round; default derived from the dataset seed and the round number. */
  seed?: number;
  /** Bring back every removed A/B test instead of removing another. */
  restoreRemoved?: boolean;
}

export interface AdvanceReport {
  /** 1 for the first call, 2 for the second, ... */
  round: number;
  /** The days that received late items (the last three of the range). */
  lateDays: string[];
  late: { feedback: number; survey: number; recordings: number };
  /** Feedback items whose comment and rating were changed. */
  edited: Array<{ id: number; feedback_id: number }>;
  removedTests: string[];
  restoredTests: string[];
  /** Tests whose results (complete, total) grew; their updated_at moved forward too. */
  grownTests: string[];
}

export interface AdvanceTarget {
  seed: number;
  days: readonly string[];
  context: ItemContext;
  state: DatasetState;
  day(day: string): DayItems;
  invalidate(day: string): void;
}

const LATE_DAYS = 3;
const EDITS_PER_ROUND = 3;

export function feedbackKey(item: { id: number; feedback_id: number }): string {
  return `${item.id}:${item.feedback_id}`;
}

export function applyAdvance(target: AdvanceTarget, options: AdvanceOptions): AdvanceReport {
  const { state } = target;
  state.rounds += 1;
  const round = state.rounds;
  const rng = createRandom(options.seed ?? hashSeed(target.seed, 'advance', round));
  const lateDays = target.days.slice(-LATE_DAYS);
  const report: AdvanceReport = {
    round,
    lateDays,
    late: { feedback: 0, survey: 0, recordings: 0 },
    edited: [],
    removedTests: [],
    restoredTests: [],
    grownTests: [],
  };

  // Edit candidates are picked before late items arrive, so an edit always hits an item a client
  // may already hold.
  const candidates = lateDays.flatMap((day) => target.day(day).feedback.map((item) => ({ day, item })));
  for (const day of lateDays) addLateItems(target, rng, day, report);
  for (let i = 0; i < EDITS_PER_ROUND && candidates.length > 0; i++) {
    const [picked] = candidates.splice(rng.int(0, candidates.length - 1), 1);
    if (!picked) break;
    const { rating, ratingText } = feedbackRating(rng, picked.item.feedback_id);
    overlayOf(state, picked.day).edits.set(feedbackKey(picked.item), {
      comment: `${picked.item.comment} [edited in round ${round}]`.trim(),
      rating,
      rating_text: ratingText,
    });
    target.invalidate(picked.day);
    report.edited.push({ id: picked.item.id, feedback_id: picked.item.feedback_id });
  }

  if (options.restoreRemoved) {
    report.restoredTests = [...state.removed];
    state.removed.clear();
  } else {
    // Keep at least one A/B test, so the list never becomes empty however often advance runs.
    const active = state.snapshots.tests.abtesting.filter((test) => !state.removed.has(test.id));
    if (active.length > 1) {
      const removed = rng.pick(active).id;
      state.removed.add(removed);
      report.removedTests.push(removed);
    }
  }

  for (const kind of ['abtesting', 'personalization'] as const) growResults(state, rng, kind, report);
  return report;
}

function addLateItems(target: AdvanceTarget, rng: Random, day: string, report: AdvanceReport): void {
  const current = target.day(day);
  const stamp = dayStamp(day);
  const overlay = overlayOf(target.state, day);
  // Each form numbers its items 0..n-1 per day (late ones included), so counting continues the
  // numbering and late ids never collide with generated ones.
  const counters = FEEDBACK_FORMS.map(
    ({ feedbackId }) => current.feedback.filter((item) => item.feedback_id === feedbackId).length,
  );
  const feedbackCount = rng.int(1, 4);
  for (let i = 0; i < feedbackCount; i++) {
    const form = rng.int(0, FEEDBACK_FORMS.length - 1);
    const counter = counters[form] ?? 0;
    counters[form] = counter + 1;
    overlay.feedback.push(buildFeedback(rng, target.context, stamp, form, counter, randomOffset(rng)));
  }
  const responses = new Set([...current.survey, ...overlay.survey].map((item) => item.id)).size;
  const responseCount = rng.int(1, 2);
  for (let r = 0; r < responseCount; r++) {
    const answers = buildSurveyResponse(
      rng,
      target.context,
      stamp,
      responses + r,
      rng.int(1, 3),
      randomOffset(rng),
    );
    overlay.survey.push(...answers);
    report.late.survey += answers.length;
  }
  const recordingCount = rng.int(1, 3);
  for (let i = 0; i < recordingCount; i++) {
    overlay.recordings.push(buildRecording(rng, stamp, current.recordings.length + i, randomOffset(rng)));
  }
  report.late.feedback += feedbackCount;
  report.late.recordings += recordingCount;
  target.invalidate(day);
}

function growResults(state: DatasetState, rng: Random, kind: TestKind, report: AdvanceReport): void {
  const tests = state.snapshots.tests[kind];
  tests.forEach((test, index) => {
    if (state.removed.has(test.id)) return;
    const results = state.snapshots.results[kind].get(test.id) ?? [];
    // New objects, not mutation: a truth() taken earlier must keep showing the old numbers.
    state.snapshots.results[kind].set(
      test.id,
      results.map((result) => {
        const added = rng.int(10, 200);
        return { ...result, total: result.total + added, complete: result.complete + rng.int(0, added) };
      }),
    );
    tests[index] = { ...test, updated_at: isoAt(Date.parse(test.updated_at) + rng.int(1, 60) * 60_000) };
    report.grownTests.push(test.id);
  });
}
