import type { Generated } from 'kysely';
import type { OptionalTimestamp } from './common.js';

/** Per-source slots of the window queue (migration 0014): locked FOR UPDATE, never written by a run. */
export interface QueueSlotsTable {
  source_id: string;
  slot: number;
}

/** One heartbeat row per worker process (migration 0014). */
export interface QueueWorkersTable {
  worker_id: string;
  host: string;
  pid: number;
  concurrency: number;
  started_at: Generated<Date>;
  last_seen_at: Generated<Date>;
  stopped_at: Date | null;
  windows_done: Generated<number>;
  windows_failed: Generated<number>;
}

/** Which source and resource a queued run has checked its stored reading for (migration 0014). */
export interface QueueRunChecksTable {
  run_id: number;
  source_id: string;
  resource: string;
  checked_at: Generated<Date>;
  /** Stale verdicts the run's workers found on this reading. */
  stale_verdicts: Generated<number>;
  /** When a worker last found it stale: a worker whose reading is older learns it again. */
  last_stale_at: OptionalTimestamp;
  /** Whether a worker checked the stored reading (migration 0049): false, the row shares the rest only. */
  checked: Generated<boolean>;
  /** The run's quiet decision, false once any worker ended it; null undecided (migration 0049). */
  quiet: boolean | null;
  /** Most items one answer of the run held, over its workers (migration 0049). */
  largest_response: Generated<number>;
  /** Sizes the run's workers know answers of the source may be cut at (migration 0050). */
  caps: Generated<number[]>;
}
