import { hash } from 'node:crypto';
import pg from 'pg';
import type { Db } from 'pg-boss';
import { CONNECT_TIMEOUT_MS } from '../db/connection.js';

/**
 * The connections pg-boss runs its statements on, ours instead of its own pool so that its
 * statements go as named ones: a worker's fetch and complete (and the read of the queues with
 * jobs waiting) are the same few texts for every window, each a CTE over the partitioned job
 * table that PostgreSQL parsed, analysed and planned again every time. Named, each connection
 * parses a text once and keeps its plan (a generic one after five runs).
 *
 * Only texts of one statement are named (several cannot be a named statement): those without a
 * semicolon (pg-boss's fetch inlines the queue's name and has no parameter; a text whose literal
 * holds a semicolon goes unnamed, as before). And only the first NAMED_TEXTS_MAX distinct ones: a
 * text naming a literal that changes would otherwise add a statement to every connection for good.
 */
export interface QueueDb extends Db {
  /** Ends the pool: pg-boss does not close connections it did not open. */
  close(): Promise<void>;
  /** The texts sent as named statements so far (for tests). */
  namedTexts(): ReadonlySet<string>;
}

export const NAMED_TEXTS_MAX = 64;

export function queueDb(
  options: { url: string; max: number; applicationName: string },
  onError: (error: Error) => void,
): QueueDb {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  pool.on('error', onError);
  const names = new Map<string, string>();
  let closing: Promise<void> | undefined;
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined && names.size < NAMED_TEXTS_MAX) {
      // From the text itself: two texts never share a name, on any connection.
      name = `pgboss_${hash('sha256', text, 'hex').slice(0, 24)}`;
      names.set(text, name);
    }
    return name;
  };
  return {
    executeSql(text, values) {
      const name = text.includes(';') ? undefined : nameOf(text);
      return name === undefined ? pool.query(text, values) : pool.query({ name, text, values });
    },
    close() {
      closing ??= pool.end();
      return closing;
    },
    namedTexts: () => new Set(names.keys()),
  };
}
