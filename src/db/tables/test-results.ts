import type { Day, DefaultTimestamp, Int8, Json, Timestamp } from './common.js';

/** Current per-variant results of a test (spec 2.2). */
export interface TestResultsTable {
  source_id: string;
  test_kind: 'abtesting' | 'personalization';
  test_id: string;
  variant: string;
  complete: Int8;
  total: Int8;
  raw: Json;
  first_seen_at: DefaultTimestamp;
  last_seen_at: DefaultTimestamp;
  last_changed_at: DefaultTimestamp;
  removed_at: Timestamp | null;
}

/** One row per test, variant and UTC day: the day's last snapshot of the results. */
export interface TestResultHistoryTable {
  source_id: string;
  test_kind: 'abtesting' | 'personalization';
  test_id: string;
  variant: string;
  day: Day;
  complete: Int8;
  total: Int8;
  captured_at: DefaultTimestamp;
}
