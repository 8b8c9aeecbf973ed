import { type Kysely, sql } from 'kysely';

/**
 * The window merge's shortcuts (migration 0044) no longer keep their statements from being planned
 * once per connection. Two of them are conditions on the function's counters inside a statement:
 * the served rows' marks cleared only `v_staged > v_inserted`, the cross-day losers set aside only
 * `v_inserted + v_updated < v_staged`. PL/pgSQL passes a variable to the planner as a parameter,
 * and a custom plan folds it: for the usual window (every row new) the statement is planned as
 * one that does nothing, at a cost no generic plan can match, so PL/pgSQL chose a custom plan, a
 * planning, on every window (the queue benchmark: 600 of 650 calls of the set-aside planned, a
 * third of a millisecond of the server's time a window). As a sub-select each condition is an
 * init plan: evaluated once when the statement runs, gating the statement's work as before, and
 * the plan is the same for every window, so the generic one is kept.
 * Done as 0043 did: each condition, found exactly once in the function's definition as 0044 wrote
 * it, is replaced there (CREATE OR REPLACE of pg_get_functiondef): owner, grants, settings stay.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLES = ['feedback', 'survey_answers', 'recordings'] as const;
const ITEM_TYPES = '(text, date, jsonb, boolean, text, bigint)';

/** 0044's conditions, as written there, and their sub-selects. */
const CONDITIONS = [
  {
    copy: '\n         and v_staged > v_inserted), marked as (',
    call: '\n         and (select v_staged > v_inserted)), marked as (',
  },
  {
    copy: '\n         and v_inserted + v_updated < v_staged\n',
    call: '\n         and (select v_inserted + v_updated < v_staged)\n',
  },
];

interface Swap {
  signature: string;
  copy: string;
  call: string;
}

function swaps(bookkeeping: string): Swap[] {
  return TABLES.flatMap((table) =>
    CONDITIONS.map((c) => ({ signature: `${quote(bookkeeping)}.merge_window_${table}${ITEM_TYPES}`, ...c })),
  );
}

/** Redefines the function with `from` (found exactly once in its body) replaced by `to`. */
async function replaceInFunction(db: AnyDb, signature: string, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  const def = rows[0]?.def ?? '';
  const found = def.split(from).length - 1;
  if (found !== 1)
    throw new Error(`${signature}: the condition to replace is found ${found} times instead of once`);
  await sql.raw(def.replace(from, () => to)).execute(db);
}

export async function up(db: AnyDb): Promise<void> {
  const bookkeeping = await bookkeepingOf(db);
  for (const { signature, copy, call } of swaps(bookkeeping))
    await replaceInFunction(db, signature, copy, call);
}

export async function down(db: AnyDb): Promise<void> {
  const bookkeeping = await bookkeepingOf(db);
  for (const { signature, copy, call } of swaps(bookkeeping).reverse())
    await replaceInFunction(db, signature, call, copy);
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
