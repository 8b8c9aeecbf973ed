import { type Kysely, sql } from 'kysely';
import pg from 'pg';
import { bookkeepingSchema } from '../db/bookkeeping.js';
import { CONNECT_TIMEOUT_MS } from '../db/connection.js';
import type { Database } from '../db/database.js';
import type { ServerReadingColumns } from '../db/tables/server-readings.js';

/**
 * The per-source bound of the queue, held by the database, not by any process: a source has N
 * rows in queue_slots, and a window of it runs only while its worker holds one of them FOR UPDATE
 * in a transaction open on a connection of its own. A worker killed with SIGKILL (or whose machine
 * is gone) loses its connection, PostgreSQL ends its transaction, and the slot is free again:
 * nothing times out, nothing has to be cleaned up.
 */

/** Makes each source have exactly `perSource` slots; a slot held right now is removed next time. */
export async function ensureSlots(
  db: Kysely<Database>,
  sources: readonly string[],
  perSource: number,
): Promise<void> {
  for (const source of sources) {
    await sql`insert into queue_slots (source_id, slot)
      select ${source}, n from generate_series(1, ${perSource}::int) as n
      on conflict do nothing`.execute(db);
    // SKIP LOCKED: lowering the setting never waits for a window in flight.
    await sql`delete from queue_slots where (source_id, slot) in (
      select source_id, slot from queue_slots
       where source_id = ${source} and slot > ${perSource}::int
       for update skip locked)`.execute(db);
  }
}

/**
 * The stale verdicts of a claimed slot's source, read with the claim (reading-store.ts
 * exchangeVerdicts): per run of `runs`, when a worker last found a reading of the source's server
 * stale, whichever resource's (a deploy changes the server, not one endpoint). And, of the latest
 * of `runs`, the checks its workers share (reading-store.ts hearCheck).
 */
export interface ClaimedSlot {
  source: string;
  /** The runs asked about: for another run, nothing was read. */
  runs: ReadonlySet<number>;
  /** By run, in milliseconds, the latest of any resource; a run of `runs` without a verdict has none. */
  lastStale: ReadonlyMap<number, number>;
  /** By `${runId}/${resource}`, the run's shared checks: the latest run's only. */
  checks: ReadonlyMap<string, SharedCheck>;
}

/** What a queued run's workers share of a resource's checks (queue_run_checks, migration 0049). */
export interface SharedCheck {
  /** A worker checked the stored reading: the others trust it. */
  checked: boolean;
  /** The run's quiet decision (quiet-mode.ts); null undecided. */
  quiet: boolean | null;
  /** Most items one answer of the run held. */
  largestResponse: number;
  /** A worker found the reading stale this run: from then on, each learns it for itself. */
  stale: boolean;
  /** Sizes the run's workers know this resource's answers may be cut at (migration 0050). */
  caps: readonly number[];
}

/** A queue_run_checks row's shared part. */
export function sharedCheckOf(row: {
  checked: boolean;
  quiet: boolean | null;
  largest_response: number;
  last_stale_at: Date | null;
  caps: readonly number[] | null;
}): SharedCheck {
  return {
    checked: row.checked,
    quiet: row.quiet,
    largestResponse: row.largest_response,
    stale: row.last_stale_at !== null,
    caps: row.caps ?? [],
  };
}

/**
 * A session that takes one slot at a time (a worker has one per window it may run at once), or
 * every slot of a source (the planner, around its own requests).
 */
export interface SlotSession {
  /**
   * Takes a free slot of the first of `sources` (in that order) that has one, in one round trip
   * however many are full, and reads the stale verdicts of its source in `runs` with it; returns
   * what it claimed, or undefined at once when every slot is held.
   */
  tryClaimAny(sources: readonly string[], runs?: readonly number[]): Promise<ClaimedSlot | undefined>;
  /**
   * Waits for every slot of `source`, in slot order (the planner's own requests: queued fairly
   * behind the workers, and two planners take them in one order). No worker runs a window of the
   * source until they are released.
   */
  claimAll(source: string): Promise<void>;
  /**
   * Frees the slot held. With `verdictOf`, also reads, in the same round trip, when a worker of
   * that run last found a reading of that source stale, any resource's (reading-store.ts
   * exchangeVerdicts): its time in milliseconds, 0 for never; and the source's stored readings as
   * they are now (reading-store.ts hearStored). Undefined when no slot was held.
   */
  release(verdictOf?: VerdictKey): Promise<Released | undefined>;
  close(): Promise<void>;
  /**
   * Its connection has failed or ended (the server restarted, pg_terminate_backend): nothing can
   * be claimed on it any more, and its owner opens another session.
   */
  readonly broken: boolean;
}

/**
 * The transaction stays idle while the window's requests run: server or role defaults must not
 * end it (it would free the slot early). transaction_timeout exists from PostgreSQL 17 on.
 */
const NO_TIMEOUTS = `select set_config(name, '0', false) from pg_settings
  where name in ('idle_in_transaction_session_timeout', 'idle_session_timeout', 'transaction_timeout', 'lock_timeout', 'statement_timeout')`;

/** What release() read with the slot's release. */
export interface Released {
  /** When a worker of the run last found a reading of the source stale, in milliseconds; 0 for never. */
  lastStale: number;
  /** The source's stored readings, one row a resource. */
  readings: StoredReadingRow[];
}

/** A server_readings row as release() reads it: `this_run`, written since the run started. */
export type StoredReadingRow = ServerReadingColumns & { resource: string; this_run: boolean };

/** One run's readings of one source, whose stale verdicts release() reads. */
export interface VerdictKey {
  runId: number;
  source: string;
}

interface VerdictRow {
  source_id: string;
  run_id: number | null;
  resource: string | null;
  last_stale_at: Date | null;
  checked: boolean | null;
  quiet: boolean | null;
  largest_response: number | null;
  caps: number[] | null;
}

export async function openSlotSession(url: string, schema: string): Promise<SlotSession> {
  const client = new pg.Client({
    connectionString: url,
    // Which process holds a slot, for whoever watches (docs/scaling.md) and the kill trials.
    application_name: `insights-sync slot pid=${process.pid}`,
    // A dead peer must be noticed: the slot must not outlive the process holding it.
    keepAlive: true,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  let broken = false;
  // An idle client whose backend is killed emits these, and never connects again by itself.
  client.on('error', () => {
    broken = true;
  });
  client.on('end', () => {
    broken = true;
  });
  await client.connect();
  await client.query(NO_TIMEOUTS);
  const bookkeeping = client.escapeIdentifier(bookkeepingSchema(schema));
  const slots = `${bookkeeping}.queue_slots`;
  const checks = `${bookkeeping}.queue_run_checks`;
  const readings = `${bookkeeping}.server_readings`;
  const runs = `${bookkeeping}.sync_runs`;
  let holding = false;
  return {
    get broken() {
      return broken;
    },
    async tryClaimAny(sources, runs = []) {
      if (holding) throw new Error('a slot session holds one slot at a time');
      if (sources.length === 0) return undefined;
      const list = `array[${sources.map((s) => client.escapeLiteral(s)).join(', ')}]::text[]`;
      const runList = `array[${runs.map((r) => String(Math.trunc(r))).join(', ')}]::integer[]`;
      // Run ids grow: the latest is the one whose windows are being run, most likely.
      const latest = runs.length === 0 ? 0 : Math.trunc(Math.max(...runs));
      // One round trip: BEGIN, the claim, and the verdicts a worker would otherwise read before
      // each window (the key's prefix, run and source, finds them), in one simple query. The
      // latest run's shared checks come along: at most a row per resource.
      const results = (await client.query(
        `begin isolation level read committed;
         with claimed as materialized (
           select source_id from ${slots} where source_id = any(${list})
            order by array_position(${list}, source_id), slot limit 1 for update skip locked)
         select c.source_id, v.run_id, v.resource, v.last_stale_at, v.checked, v.quiet, v.largest_response, v.caps
           from claimed c
           left join ${checks} v on v.run_id = any(${runList}) and v.source_id = c.source_id
                                 and (v.last_stale_at is not null or v.run_id = ${latest})`,
      )) as unknown as pg.QueryResult<VerdictRow>[];
      const rows = results.at(-1)?.rows ?? [];
      const source = rows[0]?.source_id;
      if (source === undefined) {
        await client.query('rollback');
        return undefined;
      }
      holding = true;
      const lastStale = new Map<number, number>();
      const shared = new Map<string, SharedCheck>();
      for (const row of rows) {
        const key = `${row.run_id}/${row.resource}`;
        const stale = row.last_stale_at?.getTime();
        if (row.run_id !== null && stale !== undefined)
          lastStale.set(row.run_id, Math.max(stale, lastStale.get(row.run_id) ?? 0));
        if (row.run_id === latest && row.checked !== null)
          shared.set(
            key,
            sharedCheckOf({ ...row, checked: row.checked, largest_response: row.largest_response ?? 0 }),
          );
      }
      return { source, runs: new Set(runs), lastStale, checks: shared };
    },
    async claimAll(source) {
      if (holding) throw new Error('a slot session holds one claim at a time');
      await client.query('begin isolation level read committed');
      // No SKIP LOCKED: queued behind the workers on each slot, fairly, until it is free.
      const { rows } = await client.query(
        `select slot from ${slots} where source_id = $1 order by slot for update`,
        [source],
      );
      if (rows.length === 0) {
        await client.query('rollback');
        throw new Error(`source ${source} has no queue slots: the planner creates them`);
      }
      holding = true;
    },
    async release(verdictOf) {
      if (!holding) return undefined;
      holding = false;
      if (verdictOf === undefined) {
        await client.query('rollback');
        return undefined;
      }
      const runId = Math.trunc(verdictOf.runId);
      const source = client.escapeLiteral(verdictOf.source);
      // The stored readings come along: a writer stores its reading only where that changes the
      // row as it is now, and most of a run's stores would not (reading-store.ts storeReading).
      const results = (await client.query(
        `rollback;
         select max(last_stale_at) as last_stale_at from ${checks} where run_id = ${runId} and source_id = ${source};
         select resource, head_ms::float8 as head_ms, tail_ms::float8 as tail_ms,
                start_reach_ms::float8 as start_reach_ms, end_reach_ms::float8 as end_reach_ms,
                item_order, cap, largest_response, limit_refused, instants,
                coalesce(updated_at >= (select started_at from ${runs} where run_id = ${runId}), false) as this_run
           from ${readings} where source_id = ${source}`,
      )) as unknown as pg.QueryResult[];
      const stale = results[1]?.rows[0] as { last_stale_at: Date | null } | undefined;
      return {
        lastStale: stale?.last_stale_at?.getTime() ?? 0,
        readings: (results[2]?.rows ?? []) as StoredReadingRow[],
      };
    },
    async close() {
      await client.end().catch(() => {});
    },
  };
}
