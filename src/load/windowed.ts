import type { Feedback } from '../schemas/feedback.js';
import type { Recording } from '../schemas/recording.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { Visitor } from '../schemas/visitor.js';
import type { CopyValue } from './copy-text.js';
import { dedupeByKey } from './dedupe.js';
import { feedbackKey, feedbackRow, feedbackSpec } from './feedback.js';
import { recordingKey, recordingRow, recordingSpec } from './recordings.js';
import { surveyAnswerKey, surveyAnswerRow, surveyAnswerSpec } from './survey-answers.js';
import type { LoadTransaction } from './transaction.js';
import { type CheckedUpsertSpec, type UpsertCounts, upsertRows } from './upsert.js';
import { loadVisitors } from './visitors.js';

interface WindowedTable<T> {
  spec: CheckedUpsertSpec;
  key: (item: T) => string;
  row: (sourceId: string, item: T) => CopyValue[];
  visitor?: (item: T) => Visitor;
}

type ItemOf = { feedback: Feedback; survey: SurveyAnswer; recordings: Recording };

const tables: { [R in WindowedResource]: WindowedTable<ItemOf[R]> } = {
  feedback: { spec: feedbackSpec, key: feedbackKey, row: feedbackRow, visitor: (item) => item.visitor },
  survey: {
    spec: surveyAnswerSpec,
    key: surveyAnswerKey,
    row: surveyAnswerRow,
    visitor: (item) => item.visitor,
  },
  recordings: { spec: recordingSpec, key: recordingKey, row: recordingRow },
};

export interface WindowLoad extends UpsertCounts {
  /** Items that shared a key with another item of the same response. */
  duplicates: number;
  /** ... and differed from it. */
  conflicts: number;
  visitors: UpsertCounts & { conflicts: number };
}

/** Loads one day's valid items (and their visitors) of a windowed resource. */
export async function loadWindowItems<R extends WindowedResource>(
  trx: LoadTransaction,
  resource: R,
  sourceId: string,
  items: readonly ItemOf[R][],
): Promise<WindowLoad> {
  const table = tables[resource] as WindowedTable<ItemOf[R]>;
  const deduped = dedupeByKey(items, table.key);
  const visitorOf = table.visitor;
  // Visitors first: rows then reference an existing visitor.
  const visitors = visitorOf
    ? await loadVisitors(trx, sourceId, deduped.items.map(visitorOf))
    : { inserted: 0, updated: 0, unchanged: 0, conflicts: 0 };
  const counts = await upsertRows(
    trx,
    table.spec,
    deduped.items.map((item) => table.row(sourceId, item)),
  );
  return { ...counts, duplicates: deduped.duplicates, conflicts: deduped.conflicts, visitors };
}
