import type { Generated, GeneratedAlways } from 'kysely';
import type { Resource, WindowedResource } from '../../schemas/resource-names.js';
import type { Day, DefaultTimestamp, Int8, Json, OptionalTimestamp, Timestamp } from './common.js';

export type WindowStatus = 'done' | 'open' | 'failed';
export type RunStatus = 'running' | 'ok' | 'partial' | 'failed' | 'interrupted';
/** verify: settled days read again and compared (`verify`, or the schedule's scrub). */
export type RunTrigger = 'sync' | 'backfill' | 'schedule' | 'verify';

/** The ledger: one row per source, windowed resource and UTC day. */
export interface SyncWindowsTable {
  source_id: string;
  resource: WindowedResource;
  day: Day;
  status: WindowStatus;
  item_count: Generated<number>;
  requested_limit: number | null;
  served_count: number | null;
  /** A day settled at a size no cap its reader knew covered: that size (migration 0050); else null. */
  uncapped_served: number | null;
  /** The request (startdate, enddate) the day was settled on, where its own answer settled it (migration 0051). */
  settled_from: Day | null;
  settled_to: Day | null;
  truncated: Generated<boolean>;
  rejected_count: Generated<number>;
  attempts: Generated<number>;
  last_error: string | null;
  fetched_at: DefaultTimestamp;
  run_id: Int8 | null;
  /** A proof found the reading the day was settled under stale: read it again first. */
  reopened_at: OptionalTimestamp;
  /** When a proof asked after the day was settled found the reading still held. */
  proved_at: OptionalTimestamp;
  /** When a verify last read the settled day again (src/sync/verify.ts); null: never. */
  last_verified_at: OptionalTimestamp;
  /** What that verify found: items stored the warehouse lacked, changed, no longer served, moved. */
  last_verify_lacked: number | null;
  last_verify_changed: number | null;
  last_verify_gone: number | null;
  last_verify_moved: number | null;
}

/** The last day through which every day since start_day is done; moves forward only. */
export interface WatermarksTable {
  source_id: string;
  resource: WindowedResource;
  start_day: Day;
  day: Day | null;
  updated_at: DefaultTimestamp;
}

export interface SyncRunsTable {
  run_id: GeneratedAlways<number>;
  trigger: RunTrigger;
  status: RunStatus;
  started_at: DefaultTimestamp;
  finished_at: Timestamp | null;
  from_day: Day | null;
  to_day: Day | null;
  summary: Json | null;
  error: string | null;
  /** A queued run's planner, waiting without the run lock (migration 0018). */
  heartbeat_at: Timestamp | null;
}

/** Items that failed validation, verbatim, once each. */
export interface RejectsTable {
  source_id: string;
  resource: string;
  item_hash: string;
  day: Day | null;
  item: Json;
  error: string;
  first_seen_at: DefaultTimestamp;
  run_id: Int8 | null;
}

/** schema_drift (migrations 0027, 0032): fields the API sent that the spec does not describe. */
export interface SchemaDriftTable {
  source_id: string;
  resource: Resource;
  field_path: string;
  first_seen_at: Timestamp;
  first_seen_day: Day;
  last_seen_at: Timestamp;
  last_run_id: Int8 | null;
  last_run_items: number;
  last_run_total: number;
}

/**
 * schema_drift_turns (migration 0034): a row per source and resource, locked (never read) by the
 * window whose turn it is to insert fields into schema_drift.
 */
export interface SchemaDriftTurnsTable {
  source_id: string;
  resource: Resource;
}

/** late_arrivals (migration 0029): items a run found new on days already loaded whole. */
export interface LateArrivalsTable {
  run_id: Int8;
  source_id: string;
  resource: WindowedResource;
  day_age: number;
  items: number;
  recorded_at: DefaultTimestamp;
}

/** reading_changes (migration 0030): each change of a learned server reading, one row per field. */
export interface ReadingChangesTable {
  change_id: GeneratedAlways<number>;
  source_id: string;
  resource: WindowedResource;
  field: 'startdate' | 'enddate' | 'server_day' | 'order' | 'cap' | 'limit_refused' | 'instants';
  from_value: string;
  to_value: string;
  changed_at: DefaultTimestamp;
  run_id: Int8 | null;
  evidence: string;
}
