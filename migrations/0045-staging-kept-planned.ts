import { type Kysely, sql } from 'kysely';

/**
 * The window merge's plans stay cached (migration 0041 meant them to): its staging tables are no
 * longer emptied at commit but by the merge itself. A temporary table ON COMMIT DELETE ROWS is
 * truncated at each commit, and a truncation rebuilds its primary key, which tells every backend
 * the table changed (a relcache invalidation): each statement of merge_window_<table> touching
 * the staging table was planned again on every window (the queue benchmark's 720 windows, 4
 * workers: about 9,800 plans of the merge's statements, 3.5 ms of the server's time a window), and
 * each backend read every other one's invalidations.
 * - created without ON COMMIT (rows kept): the merge empties the table where it starts, as
 *   before, and now where it ends too, so that no staged item outlives the window's statement
 *   (a forgotten visitor's neither);
 * - a delete leaves dead rows, which the merge's statements scan and the planner counts: above
 *   STAGE_BYTES (1 MB) the table is truncated where a merge starts (planned again then, once in many
 *   windows; a window of thousands of items each time, as before).
 * A connection whose staging table was created before keeps its ON COMMIT until it closes: the
 * same rows written, planned as before. Done as 0043 did: each statement, found exactly as the
 * earlier migrations wrote it, is replaced in the function's definition (CREATE OR REPLACE of
 * pg_get_functiondef): owner, grants, settings and comments stay.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

/**
 * 1 MB: some forty windows of the usual 20 items between truncations (each one plans the merge's
 * statements again, five times custom before the generic plan is kept: at 256 kB, a truncation
 * every ten windows left half of them planned), and few enough pages that the planner still takes
 * the staging table for a small one (test/load/window-plans.explain.ts).
 */
const STAGE_BYTES = 1_048_576;

const TABLES = [
  { table: 'feedback', key: 'source_id, id, feedback_id' },
  { table: 'survey_answers', key: 'source_id, id, question_id' },
  { table: 'recordings', key: 'source_id, id' },
] as const;

const ITEM_TYPES = '(text, date, jsonb, boolean, text, bigint)';

interface Swap {
  signature: string;
  copy: string;
  call: string;
}

function swaps(bookkeeping: string): Swap[] {
  return TABLES.flatMap(({ table, key }) => {
    const signature = `${quote(bookkeeping)}.merge_window_${table}${ITEM_TYPES}`;
    const stage = `pg_temp.window_${table}`;
    const created = `      create temp table window_${table} (like ${table} including defaults, primary key (${key}))`;
    return [
      {
        signature,
        copy: `${created}\n        on commit delete rows;\n    end if;\n    delete from ${stage};`,
        call: `${created};\n    elsif pg_relation_size(to_regclass('${stage}')) > ${STAGE_BYTES} then\n      truncate ${stage};\n    end if;\n    delete from ${stage};`,
      },
      {
        signature,
        copy: `    return jsonb_build_object(\n      'inserted', v_inserted,`,
        call: `    delete from ${stage};\n    return jsonb_build_object(\n      'inserted', v_inserted,`,
      },
    ];
  });
}

/** Redefines the function with `from` (found exactly once in its body) replaced by `to`. */
async function replaceInFunction(db: AnyDb, signature: string, from: string, to: string): Promise<void> {
  const { rows } = await sql<{ def: string }>`
    select pg_get_functiondef(${signature}::regprocedure) as def`.execute(db);
  const def = rows[0]?.def ?? '';
  const found = def.split(from).length - 1;
  if (found !== 1)
    throw new Error(`${signature}: the statement to replace is found ${found} times instead of once`);
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
