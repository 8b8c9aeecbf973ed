import pg from 'pg';

/**
 * What a failed delivery transaction means for the answer:
 * - 'unavailable': the database cannot be reached or cannot take the write now (connection
 *   refused or lost, shutdown, too many connections, a timeout): 503, the sender retries.
 * - 'data': PostgreSQL refused a value the schema let through (a timestamp in year 0, say): the
 *   delivery is kept as rejected, 422.
 * - 'bug': anything else; 500, so tests and logs show it instead of hiding it as "unavailable".
 */
export type DatabaseFailure = 'unavailable' | 'data' | 'bug';

/** SQLSTATE classes: 08 connection, 40 rollback (deadlock after retries), 53 resources, 57 operator, 58 system. */
const UNAVAILABLE_CLASSES = new Set(['08', '40', '53', '57', '58']);
/** 22 data exception, 23 integrity constraint violation. */
const DATA_CLASSES = new Set(['22', '23']);

export function classifyDatabaseError(error: unknown): DatabaseFailure {
  // Programming errors of our own, never a database's answer.
  if (error instanceof TypeError || error instanceof RangeError || error instanceof ReferenceError)
    return 'bug';
  if (error instanceof pg.DatabaseError) {
    // The server answered with a SQLSTATE.
    const sqlClass = (error.code ?? '').slice(0, 2);
    if (DATA_CLASSES.has(sqlClass)) return 'data';
    return UNAVAILABLE_CLASSES.has(sqlClass) ? 'unavailable' : 'bug';
  }
  // No SQLSTATE: a socket error (ECONNREFUSED, ECONNRESET, ...), "Connection terminated", a pool
  // or persist timeout. The database is out of reach.
  return 'unavailable';
}
