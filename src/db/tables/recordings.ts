import type { ColumnType } from 'kysely';
import type { DefaultTimestamp, Int8, Json, Timestamp } from './common.js';

/** Spec 2.5. Key: (source_id, id). */
export interface RecordingsTable {
  source_id: string;
  id: string;
  /** bigint since migration 0009: the spec gives no range. */
  duration: Int8;
  landing_page: string;
  referral: string;
  country: string;
  city: string;
  /** Null under the source's pii setting drop (migration 0005). */
  user_ip: string | null;
  user_agent: string | null;
  dt: Timestamp;
  video_link: string;
  raw: Json;
  first_seen_at: DefaultTimestamp;
  last_changed_at: DefaultTimestamp;
  /** When a whole read of the row's own day first lacked it (migration 0026); null while that day serves it. */
  absent_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** When a second whole read of its day in a later run still lacked it (migration 0026): kept, not deleted. */
  missing_upstream_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** When a read of its day served a newer version that failed validation (migration 0038): the row is stale. */
  superseded_by_reject_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}
