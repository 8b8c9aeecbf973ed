import type { ColumnType } from 'kysely';

/** timestamptz: read as Date, written as Date or ISO string. */
export type Timestamp = ColumnType<Date, Date | string, Date | string>;
/** A nullable timestamptz a row may be inserted without (null). */
export type OptionalTimestamp = ColumnType<
  Date | null,
  Date | string | null | undefined,
  Date | string | null
>;
/** A timestamptz with a default of now(). */
export type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** date: read as 'YYYY-MM-DD' (see type parsers in connection.ts: no time-zone shifts). */
export type Day = ColumnType<string, string, string>;
/** jsonb: read as parsed JSON, written as a JSON string. */
export type Json = ColumnType<unknown, string, string>;
/** int8 columns: read as number (parser in connection.ts refuses values beyond 2^53). */
export type Int8 = ColumnType<number, number, number>;
