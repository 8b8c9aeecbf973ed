import type { DefaultTimestamp } from './common.js';

/**
 * The suppression list (migration 0007): visitors forgotten by `forget --visitor`, whose rows the
 * sync and the webhook receiver never store again. Keyed by the id as the source stores it.
 */
export interface SuppressedVisitorsTable {
  source_id: string;
  /** visitors.id as stored: the HMAC pseudonym under pii hash and drop, never the clear id. */
  visitor_id: string;
  /** True when visitor_id is the HMAC pseudonym. */
  hashed: boolean;
  forgotten_at: DefaultTimestamp;
}
