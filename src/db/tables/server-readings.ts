import type { ColumnType, Generated, Selectable } from 'kysely';
import type { WindowedResource } from '../../schemas/resource-names.js';
import type { DefaultTimestamp, Int8, Json, Timestamp } from './common.js';

/** What the tool learned about one source's reading of the spec's gaps, per windowed resource. */
export interface ServerReadingsTable {
  source_id: string;
  resource: WindowedResource;
  head_ms: Int8 | null;
  tail_ms: Int8 | null;
  start_inclusive: Generated<boolean>;
  end_inclusive: Generated<boolean>;
  server_day: Generated<'utc' | 'early' | 'late' | 'unknown'>;
  item_order: 'oldest-first' | 'newest-first' | 'unordered' | null;
  cap: number | null;
  largest_response: Generated<number>;
  limit_refused: number | null;
  updated_at: DefaultTimestamp;
  /** Since migration 0031. */
  instants: 'honoured' | 'ignored' | 'refused' | null;
  /** Since migration 0052: how far requests reached past the evidence after a move a run saw. */
  start_reach_ms: Int8 | null;
  end_reach_ms: Int8 | null;
  /** Since migration 0055: the times of the items head_ms and tail_ms rest on. */
  head_item_ms: Int8 | null;
  tail_item_ms: Int8 | null;
}

/**
 * Versions of items whose key their table gives to another version: an item of another day (later
 * dt wins), or, since migration 0026, the version a moved item left behind (reason 'moved').
 */
export interface KeyCollisionsTable {
  source_id: string;
  resource: WindowedResource;
  item_key: string;
  dt: Timestamp;
  raw: Json;
  first_seen_at: DefaultTimestamp;
  run_id: Int8 | null;
  reason: ColumnType<'collision' | 'moved', 'collision' | 'moved' | undefined, 'collision' | 'moved'>;
}

/** The columns of a stored server reading that make the reading itself (src/sync/reading-store.ts). */
export type ServerReadingColumns = Pick<
  Selectable<ServerReadingsTable>,
  | 'head_ms'
  | 'tail_ms'
  | 'item_order'
  | 'largest_response'
  | 'cap'
  | 'limit_refused'
  | 'instants'
  | 'start_reach_ms'
  | 'end_reach_ms'
>;
