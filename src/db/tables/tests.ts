import type { Generated } from 'kysely';
import type { DefaultTimestamp, Json, Timestamp } from './common.js';

/** ab_tests and personalization_tests (spec 2.1); snapshotted every run. */
export interface TestsTable {
  source_id: string;
  id: string;
  test_name: string;
  url: string;
  goal_profile_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
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
