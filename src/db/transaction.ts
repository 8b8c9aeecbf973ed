import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Kysely, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { type CopyValue, copyLine } from './copy-text.js';
import type { Database } from './database.js';

/**
 * One transaction on one connection, usable both through Kysely (every statement) and through
 * COPY (the only statement Kysely cannot express). Loaders take this and never open their own.
 */
export interface LoadTransaction {
  db: Kysely<Database>;
  copyRows(table: string, columns: readonly string[], rows: Iterable<readonly CopyValue[]>): Promise<void>;
  /** One statement of fixed text, without Kysely: a text marked by preparedStatement goes as a named one. */
  query(text: string, values: readonly unknown[]): Promise<pg.QueryResult>;
  /**
   * What this connection is known to hold beyond the transaction (a temporary table, say), so a
   * loader can skip a statement per window. A note added here is kept only if the transaction
   * commits: what a rolled-back transaction created is gone with it.
   */
  connection: { has(note: string): boolean; add(note: string): void };
}

/** Notes of committed transactions, per pooled connection (forgotten with the connection). */
const connectionNotes = new WeakMap<pg.PoolClient, Set<string>>();

/**
 * The one table of what a database error means, by SQLSTATE: a full code where it decides alone,
 * else its two-character class.
 * - 'rerun': the whole transaction can simply run again (inTransaction does, a few times).
 * - 'unavailable': the database cannot be reached or cannot take the write now.
 * - 'data': PostgreSQL refused a value the schema let through (a timestamp in year 0, say).
 */
const SQLSTATE_MEANING: ReadonlyMap<string, 'rerun' | 'unavailable' | 'data'> = new Map([
  ['40P01', 'rerun'], // deadlock victim
  ['40001', 'rerun'], // serialization failure
  ['08', 'unavailable'], // connection
  ['40', 'unavailable'], // rollback (a deadlock after the reruns too)
  ['53', 'unavailable'], // resources
  ['57', 'unavailable'], // operator intervention
  ['58', 'unavailable'], // system
  ['22', 'data'], // data exception
  ['23', 'data'], // integrity constraint violation
]);
const MAX_TRANSACTION_ATTEMPTS = 4;

function sqlStateMeaning(code: string): 'rerun' | 'unavailable' | 'data' | undefined {
  return SQLSTATE_MEANING.get(code) ?? SQLSTATE_MEANING.get(code.slice(0, 2));
}

/** Whether the transaction that got `error` can simply run again (deadlock, serialization failure). */
function isRerunnable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && SQLSTATE_MEANING.get(code) === 'rerun';
}

/**
 * What a failed write means for its caller (a webhook delivery's answer, say):
 * - 'unavailable': connection refused or lost, shutdown, too many connections, a timeout, a
 *   deadlock still there after the reruns: the sender retries later.
 * - 'data': PostgreSQL refused a value: the write is kept as rejected.
 * - 'bug': anything else, so tests and logs show it instead of hiding it as "unavailable".
 */
export type DatabaseFailure = 'unavailable' | 'data' | 'bug';

export function classifyDatabaseError(error: unknown): DatabaseFailure {
  // Programming errors of our own, never a database's answer.
  if (error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError)
    return 'bug';
  if (error instanceof pg.DatabaseError) {
    // The server answered with a SQLSTATE.
    const meaning = sqlStateMeaning(error.code ?? '');
    if (meaning === undefined) return 'bug';
    return meaning === 'data' ? 'data' : 'unavailable';
  }
  // No SQLSTATE: a socket error (ECONNREFUSED, ECONNRESET, ...), "Connection terminated", a pool
  // or persist timeout. The database is out of reach.
  return 'unavailable';
}

/** Runs `run` (one whole transaction) again while it fails in a way a rerun cures. */
async function rerunning<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= MAX_TRANSACTION_ATTEMPTS || !isRerunnable(error)) throw error;
    }
  }
}

/**
 * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. A
 * transaction Postgres aborted as a deadlock victim or serialization failure runs again.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (trx: LoadTransaction) => Promise<T>): Promise<T> {
  return rerunning(() => inTransactionOnce(pool, fn));
}

/**
 * The same for a caller that holds only Kysely (statements, no COPY): committed when `fn`
 * resolves, rolled back when it throws, run again as a deadlock victim or serialization failure.
 */
export async function inDbTransaction<T>(
  db: Kysely<Database>,
  fn: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return rerunning(() => db.transaction().execute(fn));
}

async function inTransactionOnce<T>(pool: pg.Pool, fn: (trx: LoadTransaction) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  const opening = openingLazily(client);
  // Kysely over this one client: its "pool" hands out the same connection and never releases it.
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () => ({ query: opening.query, release: () => {} }) as unknown as pg.PoolClient,
        end: async () => {},
        // What a query's cancellation connects with: the pool's own settings.
        options: pool.options,
      },
    }),
  });
  let broken = false;
  const committedNotes = connectionNotes.get(client) ?? new Set<string>();
  const pendingNotes = new Set<string>();
  try {
    const result = await fn({
      db,
      copyRows: async (table, columns, rows) => {
        await opening.begin();
        await copyRows(client, table, columns, rows);
      },
      query: (text, values) => opening.query(text, [...values]),
      connection: {
        has: (note) => committedNotes.has(note) || pendingNotes.has(note),
        add: (note) => pendingNotes.add(note),
      },
    });
    await opening.begin();
    await client.query('commit');
    for (const note of pendingNotes) committedNotes.add(note);
    connectionNotes.set(client, committedNotes);
    return result;
  } catch (error) {
    await client.query('rollback').catch(() => {
      broken = true;
    });
    throw error;
  } finally {
    // A connection that could not even roll back is discarded, not returned to the pool.
    client.release(broken);
  }
}

function sendPrepared(client: pg.PoolClient, text: string, values?: unknown[]): Promise<pg.QueryResult> {
  const name = preparedNames.get(text);
  return name === undefined ? client.query(text, values) : client.query({ name, text, values });
}

/** Texts of the statements sent as named (prepared) statements, and their names. */
const preparedNames = new Map<string, string>();

/**
 * Marks a statement's text, the same whatever its rows (they travel as parameters), to be sent as
 * a named statement: each connection parses it once and PostgreSQL keeps its plan (a generic one
 * after five runs), instead of parsing, analysing and planning it again every transaction. The
 * webhook receiver's batches are several such statements each: unnamed, PostgreSQL spent about
 * as long preparing them as running them. Only texts from a fixed set belong here: each one
 * stays prepared on every connection of the pool until it closes.
 */
export function preparedStatement(text: string): string {
  if (!preparedNames.has(text)) preparedNames.set(text, `insights_${preparedNames.size + 1}`);
  return text;
}

/**
 * One statement as a transaction of its own (no BEGIN, no COMMIT: PostgreSQL commits it before it
 * answers that it is ready), sent as a named statement when `text` is one (preparedStatement). It
 * resolves only once committed; run again as a deadlock victim or serialization failure, like
 * inTransaction. One round trip where a transaction of one statement took three.
 */
export async function inOneStatement<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[],
): Promise<R[]> {
  return rerunning(async () => {
    // A checkout, not pool.query: a dry run's pool (src/db/rolled-back-pool.ts) hands out
    // savepoints of one transaction and has no query of its own.
    const client = await pool.connect();
    let broken = false;
    try {
      return (await sendPrepared(client, text, values)).rows as R[];
    } catch (error) {
      // An error of the server leaves the connection usable; one of the socket does not.
      broken = !(error instanceof pg.DatabaseError);
      throw error;
    } finally {
      client.release(broken);
    }
  });
}

/** Whether `text` is sent as a named statement (for tests). */
export function isPreparedStatement(text: string): boolean {
  return preparedNames.has(text);
}

/**
 * `begin` goes with the transaction's first statement when that one has no parameters (one
 * simple-protocol query of two statements): a round trip fewer. On a busy machine every round
 * trip waits for both processes to be scheduled, about as long as the statement itself: the
 * receiver's batch (its first statement the suppression lock) spent an eighth of its time on
 * `begin` alone. A first statement with parameters, or a COPY, is preceded by `begin` as before.
 */
function openingLazily(client: pg.PoolClient): {
  query: (text: string, values?: unknown[]) => Promise<pg.QueryResult>;
  begin: () => Promise<void>;
} {
  let begun = false;
  const begin = async () => {
    if (begun) return;
    begun = true;
    await client.query('begin');
  };
  const send = (text: string, values?: unknown[]): Promise<pg.QueryResult> =>
    sendPrepared(client, text, values);
  const query = async (text: string, values?: unknown[]): Promise<pg.QueryResult> => {
    if (begun) return send(text, values);
    if (values !== undefined && values.length > 0) {
      await begin();
      return send(text, values);
    }
    begun = true;
    // Several statements in one query: pg answers with the result of each, in order.
    const results = (await client.query(`begin; ${text}`)) as unknown as pg.QueryResult[];
    return results[results.length - 1] as pg.QueryResult;
  };
  return { query, begin };
}

async function copyRows(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  rows: Iterable<readonly CopyValue[]>,
): Promise<void> {
  const columnList = columns.map((c) => `"${c}"`).join(', ');
  const stream = client.query(copyFrom(`copy ${table} (${columnList}) from stdin`));
  await pipeline(Readable.from(lines(rows)), stream);
}

function* lines(rows: Iterable<readonly CopyValue[]>): Generator<string> {
  // Batches many rows per chunk: one write per row would dominate the cost of COPY.
  let chunk = '';
  for (const row of rows) {
    chunk += copyLine(row);
    if (chunk.length > 64 * 1024) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk.length > 0) yield chunk;
}
