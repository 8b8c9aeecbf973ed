import { type Kysely, sql } from 'kysely';
import { queueSchema } from './bookkeeping.js';
import type { Database } from './database.js';

/**
 * pg-boss's tables (the window queue, docs/scaling.md) are installed and upgraded by `migrate`,
 * as the role that owns the warehouse, in the queue schema that role owns. No runtime role owns
 * anything there: the owner of a table can swap it for a view that runs its own code with the
 * rights of whoever reads it (`status` as a superuser included). The runtime roles get the rows
 * (docs/roles.sql's default privileges), and a source's queue through the owner's
 * create_window_queue (migrations 0020 and 0036). pg-boss's own plans are run, so a newer
 * pg-boss brings its own; pg-boss 12 has none from the schema of pg-boss 10 (version 24), which
 * replaceQueueOfPgBoss10 upgrades in place.
 */
export async function installQueueSchema(db: Kysely<Database>, schema: string): Promise<void> {
  const name = queueSchema(schema);
  const pgBoss = await import('pg-boss');
  // CREATE SCHEMA IF NOT EXISTS needs CREATE on the database even when the schema is there.
  const plan = pgBoss.getConstructionPlans(name, { createSchema: false });
  const current = Number(INSERT_VERSION.exec(plan)?.[1]);
  if (!Number.isInteger(current)) throw new Error("pg-boss's construction plan has no version");
  // A runtime role (no CREATE in it) finding nothing to migrate leaves the queue as it is.
  const mine = await sql<{ create: boolean }>`
    select has_schema_privilege(n.oid, 'CREATE') as create from pg_namespace n where n.nspname = ${name}`.execute(
    db,
  );
  if (mine.rows[0]?.create !== true) return;
  const installed = await queueVersion(db, schema);
  if (installed === undefined) await runPlan(db, plan);
  else if (installed === PG_BOSS_10_VERSION) await replaceQueueOfPgBoss10(db, name, plan);
  else if (installed < current) await runMigration(db, pgBoss.getMigrationPlans(name, installed));
}

/** pg-boss's schema version in the queue schema; undefined when it is not installed there. */
export async function queueVersion(db: Kysely<Database>, schema: string): Promise<number | undefined> {
  const table = `${quoteIdent(queueSchema(schema))}.version`;
  const found = await sql<{ found: boolean }>`select to_regclass(${table}) is not null as found`.execute(db);
  if (found.rows[0]?.found !== true) return undefined;
  const { rows } = await sql<{ version: number }>`select version from ${sql.raw(table)}`.execute(db);
  return rows[0]?.version;
}

/** The schema version of pg-boss 10, from which pg-boss 11 and 12 have no migration. */
export const PG_BOSS_10_VERSION = 24;

/**
 * pg-boss 12 from pg-boss 10's queue schema, in one transaction: the waiting jobs (and the
 * queues) are kept aside in temporary tables, pg-boss 10's objects dropped, pg-boss 12's created,
 * the queues created again with their settings and the jobs put back, waiting as they were
 * (priority, start time, retries). A job that was active is waiting again: its worker is
 * pg-boss 10's, stopped for the upgrade (the ledger, not the job, says whether its window is
 * done, so running it again is safe). Ended jobs are not carried over: they were pg-boss's
 * history only. Any failure rolls all of it back.
 */
async function replaceQueueOfPgBoss10(db: Kysely<Database>, name: string, plan: string): Promise<void> {
  const q = quoteIdent(name);
  const objects = await sql<{ drop: string }>`
    select 'drop table if exists ' || c.oid::regclass::text || ' cascade' as drop
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = ${name} and c.relkind in ('r', 'p') and not c.relispartition
    union all
    select 'drop function if exists ' || p.oid::regprocedure::text
      from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ${name}
    union all
    select 'drop type if exists ' || t.oid::regtype::text
      from pg_type t join pg_namespace n on n.oid = t.typnamespace
     where n.nspname = ${name} and t.typtype = 'e'`.execute(db);
  const body = stripTransaction(plan);
  const upgrade = `begin;
      lock table ${q}.job, ${q}.queue in access exclusive mode;
      create temp table pgboss10_queues on commit drop as
        select name, policy, retry_limit, retry_delay, retry_backoff, expire_seconds, dead_letter
          from ${q}.queue;
      create temp table pgboss10_jobs on commit drop as
        select id, name, priority, data, case when state = 'created' then 'created' else 'retry' end as state,
               retry_limit, retry_count, retry_delay, retry_backoff, start_after, singleton_key,
               singleton_on, extract(epoch from expire_in)::int as expire_seconds, created_on,
               keep_until, dead_letter, policy
          from ${q}.job where state in ('created', 'retry', 'active');
      ${objects.rows.map((row) => `${row.drop};`).join('\n')}
      ${body}
      select ${q}.create_queue(name, jsonb_strip_nulls(jsonb_build_object(
               'policy', policy, 'retryLimit', retry_limit, 'retryDelay', retry_delay,
               'retryBackoff', retry_backoff, 'expireInSeconds', expire_seconds)))
        from pgboss10_queues where dead_letter is null;
      select ${q}.create_queue(name, jsonb_strip_nulls(jsonb_build_object(
               'policy', policy, 'retryLimit', retry_limit, 'retryDelay', retry_delay,
               'retryBackoff', retry_backoff, 'expireInSeconds', expire_seconds, 'deadLetter', dead_letter)))
        from pgboss10_queues where dead_letter is not null;
      insert into ${q}.job (id, name, priority, data, state, retry_limit, retry_count, retry_delay,
                            retry_backoff, start_after, singleton_key, singleton_on, expire_seconds,
                            created_on, keep_until, dead_letter, policy)
        select id, name, priority, data, state::${q}.job_state, retry_limit, retry_count, retry_delay,
               retry_backoff, start_after, singleton_key, singleton_on, expire_seconds, created_on,
               keep_until, dead_letter, policy
          from pgboss10_jobs;
      commit;`;
  // One connection: a failed statement leaves its transaction open there until the rollback.
  await db.connection().execute(async (connection) => {
    try {
      await sql.raw(upgrade).execute(connection);
    } catch (error) {
      await sql
        .raw('rollback')
        .execute(connection)
        .catch(() => {});
      throw error;
    }
  });
}

/** pg-boss's plan without its own BEGIN and COMMIT, to run inside a transaction of ours. */
function stripTransaction(plan: string): string {
  const body = plan.replace(/^\s*BEGIN;/, '').replace(/COMMIT;\s*$/, '');
  if (body === plan) throw new Error("pg-boss's construction plan is not one transaction");
  return body;
}

async function runPlan(db: Kysely<Database>, plan: string): Promise<void> {
  try {
    // Several statements in one simple query: pg-boss's plans hold its advisory lock throughout.
    await sql.raw(plan).execute(db);
  } catch (error) {
    // Another migrate installed it first: done.
    const code = (error as { code?: unknown }).code;
    if (code !== DUPLICATE_OBJECT && code !== DUPLICATE_TABLE && code !== DIVISION_BY_ZERO) throw error;
  }
}

/**
 * A migration plan is one transaction followed by the index builds that cannot run inside one
 * (CREATE INDEX CONCURRENTLY), each of which must be a statement of its own.
 */
async function runMigration(db: Kysely<Database>, plan: string): Promise<void> {
  const end = plan.lastIndexOf('COMMIT;');
  if (end < 0) return runPlan(db, plan);
  await runPlan(db, plan.slice(0, end + 'COMMIT;'.length));
  for (const statement of plan.slice(end + 'COMMIT;'.length).split(/;\s*\n/)) {
    const text = statement.replace(/^\s*--.*$/gm, '').trim();
    if (text !== '') await sql.raw(text).execute(db);
  }
}

const INSERT_VERSION = /\.version\(version\) VALUES \('(\d+)'\)/;
const DUPLICATE_OBJECT = '42710';
const DUPLICATE_TABLE = '42P07';
/** pg-boss's migration plans divide by zero when the schema is at the version already. */
const DIVISION_BY_ZERO = '22012';

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
