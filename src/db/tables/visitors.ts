import type { DefaultTimestamp, Json, Timestamp } from './common.js';

/** Spec 2.6, upserted from the visitor object inside feedback and survey items. */
export interface VisitorsTable {
  source_id: string;
  id: string;
  name: string | null;
  company: string | null;
  email: string | null;
  ip: string | null;
  user_agent: string | null;
  landing_page: string | null;
  ref_page: string | null;
  created_at: Timestamp | null;
  device: string | null;
  browser: string | null;
  os: string | null;
  raw: Json;
  /**
   * dt of the item whose visitor object the row holds (migration 0007): only an observation at
   * least as recent replaces it. Null while only webhooks (no dt) have named the visitor.
   */
  observed_at: Timestamp | null;
  first_seen_at: DefaultTimestamp;
  last_changed_at: DefaultTimestamp;
}
