import { type Kysely, sql } from 'kysely';

/**
 * Two things the runtime roles did with rights that let them do more, done instead by functions
 * of the owner (SECURITY DEFINER, search_path pinned). Frozen once shipped.
 *
 * - share_suppression_lock(): a writer's FOR KEY SHARE on the one row of suppression_lock. A row
 *   lock needs UPDATE on the table, and UPDATE also lets a role take the row FOR UPDATE or the
 *   table in ACCESS EXCLUSIVE mode, holding every sync window up. A row lock stays with the
 *   transaction whoever took it, so a writer calling this function holds the same lock. Roles
 *   that write the table's row lock but not the ledger (the webhook receiver) lose their grants
 *   on the table here.
 * - create_window_queue(name, options): a source's pg-boss queue (a table of the queue schema,
 *   created by pg-boss's create_queue). The queue schema belongs to the owner: a role that owned
 *   what others read there could swap a table for a view that runs its code as the reader. It only
 *   runs when the owner owns everything in that schema, so it never runs another role's code.
 * Both may be run by the roles that write the ledger (UPDATE on sync_windows), as in 0017.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const queue = `${data}_queue`;
  const lockTable = `${quote(bookkeeping)}.suppression_lock`;

  await sql`create function ${sql.id(bookkeeping, 'share_suppression_lock')}() returns integer
    language plpgsql security definer set search_path = pg_catalog, pg_temp as ${sql.lit(`
    declare locked integer;
    begin
      perform 1 from ${lockTable} for key share;
      get diagnostics locked = row_count;
      return locked;
    end`)}`.execute(db);
  await sql`comment on function ${sql.id(bookkeeping, 'share_suppression_lock')}() is ${sql.lit(
    "A writer's shared lock on the suppression list: the row of suppression_lock FOR KEY SHARE, held until the caller's transaction ends. Returns the rows locked (1).",
  )}`.execute(db);

  await sql`create function ${sql.id(bookkeeping, 'create_window_queue')}(queue_name text, options json)
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
      perform ${quote(queue)}.create_queue(queue_name, options);
    end`)}`.execute(db);
  await sql`comment on function ${sql.id(bookkeeping, 'create_window_queue')}(text, json) is ${sql.lit(
    "A source's window queue (pg-boss's create_queue, run as the owner of the queue schema), for the roles that plan runs; refused when the queue schema holds another role's objects.",
  )}`.execute(db);

  const writers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'sync_windows'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'UPDATE'`.execute(db);
  const lockers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'suppression_lock'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'UPDATE'`.execute(db);
  for (const name of ['share_suppression_lock()', 'create_window_queue(text, json)'])
    await sql`revoke all on function ${sql.raw(`${quote(bookkeeping)}.${name}`)} from public`.execute(db);
  const writerRoles = new Set(writers.rows.map((r) => r.role));
  for (const role of writerRoles) {
    await sql`grant execute on function ${sql.id(bookkeeping, 'share_suppression_lock')}() to ${sql.raw(role)}`.execute(
      db,
    );
    await sql`grant execute on function ${sql.id(bookkeeping, 'create_window_queue')}(text, json) to ${sql.raw(role)}`.execute(
      db,
    );
  }
  for (const { role } of lockers.rows) {
    if (writerRoles.has(role)) continue;
    await sql`grant execute on function ${sql.id(bookkeeping, 'share_suppression_lock')}() to ${sql.raw(role)}`.execute(
      db,
    );
    await sql`revoke all on ${sql.raw(lockTable)} from ${sql.raw(role)}`.execute(db);
  }
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

export async function down(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const bookkeeping = `${rows[0]?.data ?? ''}_state`;
  await sql`drop function ${sql.id(bookkeeping, 'create_window_queue')}(text, json)`.execute(db);
  await sql`drop function ${sql.id(bookkeeping, 'share_suppression_lock')}()`.execute(db);
}
