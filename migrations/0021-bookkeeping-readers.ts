import { type Kysely, sql } from 'kysely';

/**
 * Who reads the bookkeeping schema. Frozen once shipped.
 *
 * The tables made before migration 0014 were created in the data schema and moved with their
 * grants: SELECT for the analysts too, who have no USAGE on the bookkeeping schema (only that kept
 * them out). Their grants become what the schema's default privileges give a new table (the
 * owner's, docs/roles.sql: the sync role writes, the monitor reads), and a role that may not use
 * the schema keeps no grant in it.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const tables = await sql<{ name: string }>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = ${bookkeeping} and c.relkind in ('r', 'p', 'v', 'm') order by 1`.execute(db);
  const defaults = await sql<{ role: string; privilege: string }>`
    select a.grantee::regrole::text as role, a.privilege_type as privilege
      from pg_default_acl d
      join pg_namespace n on n.oid = d.defaclnamespace
      cross join lateral aclexplode(d.defaclacl) a
     where n.nspname = ${bookkeeping} and d.defaclrole = current_user::regrole and d.defaclobjtype = 'r'
       and a.grantee <> 0`.execute(db);
  for (const { name } of tables.rows)
    for (const { role, privilege } of defaults.rows)
      await sql`grant ${sql.raw(privilege)} on ${sql.id(bookkeeping, name)} to ${sql.raw(role)}`.execute(db);
  const outsiders = await sql<{ role: string; name: string }>`
    select distinct case when a.grantee = 0 then 'public' else a.grantee::regrole::text end as role,
           c.relname as name
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and a.grantee <> c.relowner
       and (a.grantee = 0 or not has_schema_privilege(a.grantee, n.oid, 'USAGE'))`.execute(db);
  for (const { role, name } of outsiders.rows)
    await sql`revoke all on ${sql.id(bookkeeping, name)} from ${sql.raw(role)}`.execute(db);
}

export async function down(): Promise<void> {
  // The grants an analyst had were never of use to it (no USAGE on the schema).
}
