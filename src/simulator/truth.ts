import type { Feedback } from '../schemas/feedback.js';
import type { Heatmap } from '../schemas/heatmap.js';
import type { Recording } from '../schemas/recording.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { Test, TestKind, TestResult } from '../schemas/test.js';
import type { Dataset } from './dataset.js';
import { type ItemView, presentWindowed, withExtras } from './presentation.js';

export interface DatasetMeta {
  /** The day whose feedback count is above the default cap (10th day of the range), if any. */
  busyDay: string | null;
  /** Days with no feedback, survey answer or recording at all. */
  emptyDays: string[];
}

/**
 * Everything the simulator would serve, ignoring cap and faults. Windowed lists are oldest-first
 * (dt, then key). Malformed items are left out of the valid lists and listed, as served, under
 * `malformed`; a client that validates must have quarantined exactly those.
 */
export interface GroundTruth {
  abTests: Test[];
  personalizationTests: Test[];
  /** By test id. */
  results: { abtesting: Record<string, TestResult[]>; personalization: Record<string, TestResult[]> };
  feedback: Feedback[];
  survey: SurveyAnswer[];
  recordings: Recording[];
  heatmaps: Heatmap[];
  meta: DatasetMeta;
  malformed: { feedback: unknown[]; survey: unknown[]; recordings: unknown[] };
}

export function assembleTruth(dataset: Dataset, view: ItemView): GroundTruth {
  const truth: GroundTruth = {
    abTests: dataset.tests('abtesting').map((test) => withExtras(test, view)),
    personalizationTests: dataset.tests('personalization').map((test) => withExtras(test, view)),
    results: {
      abtesting: resultsOf(dataset, 'abtesting', view),
      personalization: resultsOf(dataset, 'personalization', view),
    },
    feedback: [],
    survey: [],
    recordings: [],
    heatmaps: dataset.heatmaps().map((heatmap) => withExtras(heatmap, view)),
    meta: dataset.meta(),
    malformed: { feedback: [], survey: [], recordings: [] },
  };
  for (const day of dataset.days) {
    const items = dataset.day(day);
    collect(dataset.seed, 'feedback', items.feedback, view, truth.feedback, truth.malformed.feedback);
    collect(dataset.seed, 'survey', items.survey, view, truth.survey, truth.malformed.survey);
    collect(dataset.seed, 'recordings', items.recordings, view, truth.recordings, truth.malformed.recordings);
  }
  return truth;
}

function resultsOf(dataset: Dataset, kind: TestKind, view: ItemView): Record<string, TestResult[]> {
  const byId: Record<string, TestResult[]> = {};
  for (const test of dataset.tests(kind)) {
    byId[test.id] = (dataset.results(kind, test.id) ?? []).map((result) => withExtras(result, view));
  }
  return byId;
}

function collect<T extends Record<string, unknown>>(
  seed: number,
  resource: WindowedResource,
  items: readonly T[],
  view: ItemView,
  valid: T[],
  malformed: unknown[],
): void {
  for (const item of items) {
    const served = presentWindowed(seed, resource, item, view);
    if (served.malformed) malformed.push(served.item);
    else valid.push(served.item as T);
  }
}
