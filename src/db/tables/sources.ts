import type { DefaultTimestamp } from './common.js';

/** One row per configured source (a Website Insights account / base URL). */
export interface SourcesTable {
  source_id: string;
  base_url: string;
  first_seen_at: DefaultTimestamp;
}
