import type { Generated } from 'kysely';
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
  /** First run of the current streak of absences; null while listed (migration 0008). */
  missing_since: Timestamp | null;
  /** Runs in a row that found the row absent; removed_at is set at 2. */
  missing_runs: Generated<number>;
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
