import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './database.js';

const { Pool, types } = pg;

const INT8_OID = 20;
const NUMERIC_OID = 1700;
const DATE_OID = 1082;

function parseInt8(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed))
    throw new RangeError(`int8 value ${value} is beyond 2^53 and cannot be a number`);
  return parsed;
}

/**
 * pg returns int8 and numeric as strings and turns `date` into a local-time Date. Decided once:
 * int8 -> number (refusing unsafe values), numeric -> number, date -> 'YYYY-MM-DD' string.
 */
export const typeParsers = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return parseInt8;
    if (oid === NUMERIC_OID) return (value: string) => Number(value);
    if (oid === DATE_OID) return (value: string) => value;
    return types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface ConnectionOptions {
  url: string;
  /** Warehouse schema; every connection's search_path points at it. */
  schema: string;
  max?: number;
  applicationName?: string;
}

export function createPool(options: ConnectionOptions): pg.Pool {
  if (!SCHEMA_NAME.test(options.schema))
    throw new Error(`invalid schema name ${JSON.stringify(options.schema)}`);
  const pool = new Pool({
    connectionString: options.url,
    max: options.max ?? 10,
    types: typeParsers,
    application_name: options.applicationName ?? 'insights-sync',
    options: `-c search_path=${options.schema}`,
  });
  // A client that loses its server must not crash the process: idle ones report on the pool,
  // checked-out ones on themselves (the query in flight still rejects and is handled there).
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return pool;
}

export function createDb(pool: pg.Pool): Kysely<Database> {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
