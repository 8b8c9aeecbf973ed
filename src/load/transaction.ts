import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Database } from '../db/database.js';
import { type CopyValue, copyLine } from './copy-text.js';

/**
 * One transaction on one connection, usable both through Kysely (every statement) and through
 * COPY (the only statement Kysely cannot express). Loaders take this and never open their own.
 */
export interface LoadTransaction {
  db: Kysely<Database>;
  copyRows(table: string, columns: readonly string[], rows: Iterable<readonly CopyValue[]>): Promise<void>;
  /**
   * What this connection is known to hold beyond the transaction (a temporary table, say), so a
   * loader can skip a statement per window. A note added here is kept only if the transaction
   * commits: what a rolled-back transaction created is gone with it.
   */
  connection: { has(note: string): boolean; add(note: string): void };
}

/** Notes of committed transactions, per pooled connection (forgotten with the connection). */
const connectionNotes = new WeakMap<pg.PoolClient, Set<string>>();

/** SQLSTATEs after which the whole transaction can simply run again. */
const RETRYABLE_SQLSTATES = new Set(['40P01', '40001']);
const MAX_TRANSACTION_ATTEMPTS = 4;

/**
 * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. A
 * transaction Postgres aborted as a deadlock victim or serialization failure runs again.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (trx: LoadTransaction) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inTransactionOnce(pool, fn);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (attempt >= MAX_TRANSACTION_ATTEMPTS || typeof code !== 'string' || !RETRYABLE_SQLSTATES.has(code))
        throw error;
    }
  }
}

async function inTransactionOnce<T>(pool: pg.Pool, fn: (trx: LoadTransaction) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // Kysely over this one client: its "pool" hands out the same connection and never releases it.
  const db = new Kysely<Database>({
    dialect: new PostgresDialect({
      pool: {
        connect: async () =>
          ({ query: client.query.bind(client), release: () => {} }) as unknown as pg.PoolClient,
        end: async () => {},
      },
    }),
  });
  let broken = false;
  const committedNotes = connectionNotes.get(client) ?? new Set<string>();
  const pendingNotes = new Set<string>();
  try {
    await client.query('begin');
    const result = await fn({
      db,
      copyRows: (table, columns, rows) => copyRows(client, table, columns, rows),
      connection: {
        has: (note) => committedNotes.has(note) || pendingNotes.has(note),
        add: (note) => pendingNotes.add(note),
      },
    });
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
