import type { Generated } from 'kysely';
import type { DefaultTimestamp, Int8, Json, Timestamp } from './common.js';

/** Spec 2.7; snapshotted every run. */
export interface HeatmapsTable {
  source_id: string;
  id: string;
  name: string;
  url: string;
  rule: string;
  start_time: Timestamp;
  end_time: Timestamp | null;
  /** bigint since migration 0009: the spec gives no range. */
  heatmap_limit: Int8;
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
