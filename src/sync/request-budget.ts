import { type Kysely, sql } from 'kysely';
import { abortableSleep, type Sleep } from '../api/abort.js';
import type { Pace } from '../api/api-client.js';
import type { SourceConfig } from '../config/source-config.js';
import type { Database } from '../db/database.js';

/**
 * A source's requests-per-second budget, held by the database (request_budgets, migration 0019),
 * so that it holds across every process and machine that requests from the source: the planner's
 * snapshots, every worker's windows, an in-process run.
 *
 * A reservation (a GCRA with no burst): one row per source holds `next_at`, the earliest start
 * the next request may have. A request moves it on by 1/rps seconds in one atomic upsert and
 * starts at the value it replaced (or now, if that is past); the row lock orders concurrent
 * reservations, so reserved starts are at least 1/rps apart whoever makes them. The cost is one
 * round trip per request, and only for a source with a budget. A reservation never given back (a
 * process that dies while it waits) only leaves a gap: the budget errs on the slow side.
 */

export interface Reservation {
  /** The reserved start, epoch milliseconds on the database's clock (microseconds kept). */
  startsAtMs: number;
  /** How long to wait from now for it: 0 when the source has been idle. */
  waitMs: number;
}

/**
 * Reserves the next start of a request of `source`. clock_timestamp(), not now(): a reservation
 * that waited for the row lock starts from when it got it. The wait is computed by the database
 * too, so a process whose clock differs from the database's waits the right time all the same.
 */
export async function reserveRequestStart(
  db: Kysely<Database>,
  source: string,
  requestsPerSecond: number,
): Promise<Reservation> {
  const intervalSeconds = 1 / requestsPerSecond;
  const interval = sql`make_interval(secs => ${intervalSeconds}::float8)`;
  const { rows } = await sql<{ starts_at_ms: number; wait_ms: number }>`
    insert into request_budgets as b (source_id, next_at)
    values (${source}, clock_timestamp() + ${interval})
    on conflict (source_id) do update set next_at = greatest(b.next_at, clock_timestamp()) + ${interval}
    returning extract(epoch from b.next_at - ${interval})::float8 * 1000 as starts_at_ms,
              greatest(0, extract(epoch from b.next_at - ${interval} - clock_timestamp())::float8 * 1000) as wait_ms`.execute(
    db,
  );
  const row = rows[0];
  if (row === undefined) throw new Error(`no reservation returned for source ${source}`);
  return { startsAtMs: row.starts_at_ms, waitMs: row.wait_ms };
}

/**
 * The pace of a source's client: before each request (each attempt), a reservation, then the
 * wait for it (cut short by the caller's signal). Undefined when the source has no budget: then
 * no request costs a round trip to the database.
 */
export function budgetPace(
  db: Kysely<Database>,
  source: Pick<SourceConfig, 'name' | 'requestsPerSecond'>,
  sleep: Sleep = abortableSleep,
): Pace | undefined {
  const rps = source.requestsPerSecond;
  if (rps === undefined || rps <= 0) return undefined;
  return async (signal) => {
    const { waitMs } = await reserveRequestStart(db, source.name, rps);
    if (waitMs > 0) await sleep(waitMs, signal);
  };
}
