import { type Kysely, sql } from 'kysely';

/**
 * create_window_queue (0020) hands its options to pg-boss's create_queue as jsonb: pg-boss 12's
 * takes jsonb (pg-boss 10's took json, and json converts to jsonb only on assignment, never in a
 * call). Same checks, same grants (CREATE OR REPLACE keeps them). Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

async function define(db: AnyDb, argument: string): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const queue = `${data}_queue`;
  await sql`create or replace function ${sql.id(bookkeeping, 'create_window_queue')}(queue_name text, options json)
    returns void language plpgsql security definer set search_path = pg_catalog, pg_temp as ${sql.lit(`
    begin
      if queue_name not like 'windows.%' then
        raise exception 'not a window queue: %', queue_name using errcode = '22023';
      end if;
      if exists (select 1 from pg_namespace n where n.nspname = ${literal(queue)}
                    and n.nspowner <> current_user::regrole)
         or exists (select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace
                     where n.nspname = ${literal(queue)} and c.relowner <> current_user::regrole)
         or exists (select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                     where n.nspname = ${literal(queue)} and p.proowner <> current_user::regrole)
         or exists (select 1 from pg_type t join pg_namespace n on n.oid = t.typnamespace
                     where n.nspname = ${literal(queue)} and t.typowner <> current_user::regrole) then
        raise exception 'schema % holds objects of another role than %: reassign them to it (docs/roles.sql)',
          ${literal(queue)}, current_user using errcode = '42501';
      end if;
      perform ${quote(queue)}.create_queue(queue_name, ${argument});
    end`)}`.execute(db);
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

export async function up(db: AnyDb): Promise<void> {
  await define(db, 'options::jsonb');
}

export async function down(db: AnyDb): Promise<void> {
  await define(db, 'options');
}
