import type { DefaultTimestamp, Json, Timestamp } from './common.js';

/** Spec 2.7; snapshotted every run. */
export interface HeatmapsTable {
  source_id: string;
  id: string;
  name: string;
  url: string;
  rule: string;
  start_time: Timestamp;
  end_time: Timestamp | null;
  heatmap_limit: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  raw: Json;
  first_seen_at: DefaultTimestamp;
  last_seen_at: DefaultTimestamp;
  last_changed_at: DefaultTimestamp;
  removed_at: Timestamp | null;
}
