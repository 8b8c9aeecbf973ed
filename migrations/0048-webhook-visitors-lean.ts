import { type Kysely, sql } from 'kysely';

/**
 * The visitors of the webhook receiver's batch cost PostgreSQL two conversions per visitor that
 * decided nothing:
 * - merge_visitors() (migration 0043) sorted each key's observations by, last, the text of their
 *   raw: a jsonb written out as text for every visitor given, webhook or API. Only timed
 *   observations (an API window's, observed_at set) can tie on every earlier key; untimed ones (a
 *   webhook's) are told apart by their position, which is unique. The text is now computed for the
 *   timed ones only; the order, and what is written, are unchanged.
 * - merge_webhook_rows() (migration 0042, as 0043 left it) took each visitor's raw as its text
 *   parsed again (`(r ->> 'raw')::jsonb`). The receiver's usual batch passes it as a JSON object
 *   (the stored body's visitor, receive_webhook_batch()), which was written out as text and parsed
 *   back; a JSON string (a transaction's merge, src/load/webhook-items.ts) is still parsed. The
 *   same jsonb either way.
 * Done as 0043 and 0047 did: each expression, found exactly as the earlier migrations wrote it, is
 * replaced in the function's definition (CREATE OR REPLACE of pg_get_functiondef): owner, grants,
 * settings and comments stay. The earlier texts are copied here, frozen, to find them and for down().
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

/** merge_visitors()'s last sort key, as 0043 wrote it, and from now on. */
const SORT_BY_RAW = {
  before: '(g.raw::text collate "C") desc',
  after: '(case when g.observed_at is not null then g.raw::text end collate "C") desc',
};

/** merge_webhook_rows()'s visitors' raws, as 0043 wrote it, and from now on. */
const VISITOR_RAWS = {
  before: "array_agg((e.r ->> 'raw')::jsonb order by e.n) as raws",
  after:
    "array_agg(case when jsonb_typeof(e.r -> 'raw') = 'string' then (e.r ->> 'raw')::jsonb else e.r -> 'raw' end order by e.n) as raws",
};

const signatures = (bookkeeping: string) => ({
  visitors: `${quote(bookkeeping)}.merge_visitors(text[], jsonb[], jsonb[], timestamptz[])`,
  webhooks: `${quote(bookkeeping)}.merge_webhook_rows(jsonb, jsonb, jsonb)`,
});

export async function up(db: AnyDb): Promise<void> {
  const { visitors, webhooks } = signatures(await bookkeepingOf(db));
  await replaceInFunction(db, visitors, SORT_BY_RAW.before, SORT_BY_RAW.after);
  await replaceInFunction(db, webhooks, VISITOR_RAWS.before, VISITOR_RAWS.after);
}

export async function down(db: AnyDb): Promise<void> {
  const { visitors, webhooks } = signatures(await bookkeepingOf(db));
  await replaceInFunction(db, webhooks, VISITOR_RAWS.after, VISITOR_RAWS.before);
  await replaceInFunction(db, visitors, SORT_BY_RAW.after, SORT_BY_RAW.before);
}

/** Redefines the function with `from` (found exactly once in its definition) replaced by `to`. */
async function replaceInFunction(db: AnyDb, signature: string, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  const def = rows[0]?.def ?? '';
  const found = def.split(from).length - 1;
  if (found !== 1)
    throw new Error(`${signature}: the text to replace is found ${found} times instead of once`);
  await sql.raw(def.replace(from, () => to)).execute(db);
}

async function bookkeepingOf(db: AnyDb): Promise<string> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return `${data}_state`;
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
