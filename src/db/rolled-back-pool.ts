import type pg from 'pg';

/**
 * A pool for a dry run (`verify --dry-run`): every connection it hands out is one and the same,
 * inside one transaction that `discard` rolls back. The code run on it is the code of a real run,
 * unchanged: its reads see its own writes (a second pass sees what the first stored), nobody else
 * ever does, and nothing stays. The alternative, a read-only comparison, would be a second way of
 * telling what a read changes; this one counts with the load's own counts.
 *
 * A transaction of the code (`begin` ... `commit` or `rollback`) becomes a savepoint. Checkouts
 * take turns (one connection), each in a savepoint of its own: a statement that fails undoes its
 * checkout only, as it would have failed alone on a connection of its own.
 */
export interface RolledBackPool {
  pool: pg.Pool;
  /** Rolls everything back and gives the connection back to the real pool. */
  discard(): Promise<void>;
}

type Query = pg.PoolClient['query'];

export async function rolledBackPool(real: pg.Pool): Promise<RolledBackPool> {
  const client = await real.connect();
  await client.query('begin');
  let turns: Promise<void> = Promise.resolve();

  const connect = async (): Promise<pg.PoolClient> => {
    let endTurn: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      endTurn = resolve;
    });
    const before = turns;
    turns = turns.then(() => mine);
    await before;
    await client.query('savepoint dry_checkout');
    const query = ((config: unknown, values?: unknown) =>
      (client.query as (c: unknown, v?: unknown) => unknown)(asSavepoint(config), values)) as Query;
    const release = () => {
      void endCheckout(client).finally(endTurn);
    };
    return { query, release } as unknown as pg.PoolClient;
  };

  const pool = { connect, end: async () => {}, options: real.options } as unknown as pg.Pool;
  return {
    pool,
    discard: async () => {
      await turns;
      try {
        await client.query('rollback');
      } finally {
        client.release();
      }
    },
  };
}

/** A checkout's savepoint released, or rolled back when a statement of it failed (and aborted it). */
async function endCheckout(client: pg.PoolClient): Promise<void> {
  try {
    await client.query('release savepoint dry_checkout');
  } catch {
    await client.query('rollback to savepoint dry_checkout; release savepoint dry_checkout').catch(() => {});
  }
}

/**
 * What a commit does to the loaders' staging tables (`on commit delete rows`): a savepoint's
 * release does not, so it is done here, to every temporary table of the session.
 */
const EMPTY_TEMP_TABLES = `do $$
  declare t regclass;
  begin
    for t in select c.oid::regclass from pg_class c where c.relnamespace = pg_my_temp_schema() and c.relkind = 'r'
    loop execute format('truncate %s', t); end loop;
  end $$`;

/** A statement that opens or ends a transaction, turned into its savepoint's; any other as it is. */
export function asSavepoint(config: unknown): unknown {
  const text = typeof config === 'string' ? config : undefined;
  if (text === undefined) return config;
  const trimmed = text.trim();
  if (/^commit;?$/i.test(trimmed)) return `release savepoint dry_tx; ${EMPTY_TEMP_TABLES}`;
  if (/^rollback;?$/i.test(trimmed)) return 'rollback to savepoint dry_tx; release savepoint dry_tx';
  return text.replace(/^\s*(begin|start transaction)\b[^;]*/i, 'savepoint dry_tx');
}
