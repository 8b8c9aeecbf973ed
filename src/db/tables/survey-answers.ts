import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Int8, Json, Timestamp } from './common.js';
import type { Origin } from './webhook-events.js';

/** Spec 2.4. Key: (source_id, id, question_id). */
export interface SurveyAnswersTable {
  source_id: string;
  id: Int8;
  question_id: Int8;
  question: string | null;
  session: string | null;
  comment: string | null;
  dt: Timestamp | null;
  url: string | null;
  visitor_id: string | null;
  raw: Json;
  first_seen_at: DefaultTimestamp;
  last_changed_at: DefaultTimestamp;
  /** When a whole read of the row's own day first lacked it (migration 0026); null while that day serves it. */
  absent_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** When a second whole read of its day in a later run still lacked it (migration 0026): kept, not deleted. */
  missing_upstream_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** When a read of its day served a newer version that failed validation (migration 0038): the row is stale. */
  superseded_by_reject_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Which path has seen the row (migration 0002): 'webhook' rows are provisional. */
  origin: Origin;
  /** When the webhook delivery that brought the row before the API did was received (migration 0015). */
  webhook_received_at: Timestamp | null;
}
