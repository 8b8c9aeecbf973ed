import type pg from 'pg';

/** A client's own `query`, as `interceptQueries` hands it on. */
export type ClientQuery = (...args: unknown[]) => unknown;

/**
 * Every query of every client `pool` hands out goes through `intercept`, which calls the client's
 * own `query` (or not): a test counts the statements the code sends, or explains them first, on
 * the connections the code itself uses. Each client is wrapped once, however often it is lent.
 */
export function interceptQueries(
  pool: pg.Pool,
  intercept: (args: unknown[], query: ClientQuery, client: pg.PoolClient) => unknown,
): void {
  const wrapped = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as ClientQuery;
    (client as unknown as { query: ClientQuery }).query = (...args: unknown[]) =>
      intercept(args, query, client);
  });
}
