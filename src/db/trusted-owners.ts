import { type Kysely, sql } from 'kysely';
import { CliError } from '../errors.js';
import { bookkeepingSchema, queueSchema } from './bookkeeping.js';
import type { Database } from './database.js';

/**
 * The owner of a table or view decides what runs when someone reads it: a role that owned a
 * table of the queue could swap it for a view calling its own function, which then runs with the
 * rights of whoever reads it (a superuser running `status` included). So a command that only
 * reads checks first that everything in the warehouse's schemas (data, bookkeeping, queue) belongs
 * to the role that owns the data schema (the one that runs `migrate`) or to a superuser, and reads
 * nothing otherwise. One catalog query, schema-qualified, that runs no code of anyone's.
 */
export interface ForeignObject {
  schema: string;
  /** The schema itself, or a table, view, function or type in it. */
  object: string;
  owner: string;
}

async function foreignObjects(db: Kysely<Database>, schema: string): Promise<ForeignObject[]> {
  const schemas = [schema, bookkeepingSchema(schema), queueSchema(schema)];
  const { rows } = await sql<ForeignObject>`
    with warehouse as (
      select n.nspowner as owner from pg_catalog.pg_namespace n where n.nspname = ${schema}
    ), objects as (
      select n.nspname as schema, 'schema ' || n.nspname as object, n.nspowner as owner
        from pg_catalog.pg_namespace n where n.nspname = any(${schemas})
      union all
      select n.nspname, n.nspname || '.' || c.relname, c.relowner
        from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       where n.nspname = any(${schemas})
      union all
      select n.nspname, n.nspname || '.' || p.proname || '()', p.proowner
        from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
       where n.nspname = any(${schemas})
      union all
      select n.nspname, n.nspname || '.' || t.typname, t.typowner
        from pg_catalog.pg_type t join pg_catalog.pg_namespace n on n.oid = t.typnamespace
       where n.nspname = any(${schemas})
    )
    select o.schema, o.object, r.rolname as owner
      from objects o
      join pg_catalog.pg_roles r on r.oid = o.owner
      cross join warehouse w
     where o.owner <> w.owner and not r.rolsuper
     order by o.object not like 'schema %', o.schema, o.object`.execute(db);
  return rows;
}

/** Refuses, in one line, to read a warehouse whose schemas hold objects of another role. */
export async function assertTrustedOwners(db: Kysely<Database>, schema: string): Promise<void> {
  const foreign = await foreignObjects(db, schema);
  const first = foreign[0];
  if (first === undefined) return;
  const owner = await sql<{ owner: string }>`
    select r.rolname as owner from pg_catalog.pg_namespace n
      join pg_catalog.pg_roles r on r.oid = n.nspowner where n.nspname = ${schema}`.execute(db);
  const warehouseOwner = owner.rows[0]?.owner ?? `the owner of schema ${schema}`;
  const others = foreign.length > 1 ? `, as are ${foreign.length - 1} other object(s)` : '';
  throw new CliError(
    `${first.object} is owned by ${first.owner}, not by ${warehouseOwner}${others}: a command that reads the warehouse reads nothing another role owns (its owner could make the read run its code); as a superuser, reassign them to ${warehouseOwner} (docs/roles.sql)`,
  );
}
