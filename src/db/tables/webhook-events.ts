import type { ColumnType, Generated, GeneratedAlways } from 'kysely';
import type { DefaultTimestamp, Json, Timestamp } from './common.js';

/**
 * Which path has seen a feedback or survey_answers row (migration 0002): 'api' (the sync),
 * 'webhook' (provisional: only a webhook has delivered it; dt, url, rating are still null) or
 * 'both'. Column default 'api'.
 */
export type Origin = Generated<'api' | 'webhook' | 'both'>;

/** 'applied': written to the tables. 'rejected': kept for inspection only; `error` says why. */
export type WebhookEventStatus = 'applied' | 'rejected';

/** Every accepted webhook delivery, once per source and distinct body (migration 0002). */
export interface WebhookEventsTable {
  id: GeneratedAlways<number>;
  source_id: string;
  /** sha256 (hex) of the body's canonical JSON. */
  body_hash: string;
  /** The body's `type`, as sent; null when it has no string `type`. */
  type: string | null;
  status: WebhookEventStatus;
  error: string | null;
  /** The parsed body; null when it is kept in body_text, or cleared (body_cleared_at). */
  body: Json | null;
  /** JSON text of a body PostgreSQL cannot hold as jsonb (a \u0000 or unpaired surrogate). */
  body_text: string | null;
  received_at: DefaultTimestamp;
  last_received_at: DefaultTimestamp;
  delivery_count: Generated<number>;
  applied_at: Timestamp | null;
  /** When the body was cleared after the retention (migration 0011); null while it is kept. */
  body_cleared_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}
