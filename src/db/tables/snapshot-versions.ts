import type { Int8, Timestamp } from './common.js';

/** The dating every version table shares (migration 0014): valid_to null is the current version. */
interface Dated {
  source_id: string;
  id: string;
  valid_from: Timestamp;
  valid_to: Timestamp | null;
  /** A removal version: the service deleted the row; the other columns hold its last values. */
  removed: boolean;
}

/** ab_test_versions and personalization_test_versions: every version of a test (spec 2.1). */
export interface TestVersionsTable extends Dated {
  test_name: string;
  url: string;
  goal_profile_id: string;
}

/** heatmap_versions: every version of a heatmap (spec 2.7). */
export interface HeatmapVersionsTable extends Dated {
  name: string;
  url: string;
  rule: string;
  start_time: Timestamp;
  end_time: Timestamp | null;
  heatmap_limit: Int8;
}
