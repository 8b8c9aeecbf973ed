import { type Kysely, sql } from 'kysely';

/**
 * Window jobs on a queue. Frozen once shipped.
 *
 * pg-boss keeps the jobs in its own schema (`<schema>_queue`, created by pg-boss itself, which
 * versions its own tables). These two tables are ours:
 * - queue_slots: N rows per source. A worker runs a window of a source only while it holds one of
 *   that source's rows FOR UPDATE in a transaction open on its own connection. The bound on a
 *   source's windows in flight thus holds across every worker and machine, and a killed worker's
 *   slot comes back the moment PostgreSQL notices its connection is gone.
 * - queue_workers: one heartbeat row per worker process, for `status`.
 * - queue_run_checks: which source and resource a queued run has checked its stored server
 *   reading for, so that one worker of the run checks it, not every worker.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await sql`create table queue_slots (
    source_id text not null,
    slot integer not null check (slot >= 1),
    primary key (source_id, slot)
  )`.execute(db);
  await sql`comment on table queue_slots is ${sql.lit(
    'Per-source slots of the window queue: a worker holds one row FOR UPDATE while it runs a window of that source, so at most as many windows of a source run at once as it has rows (INSIGHTS_SOURCE_CONCURRENCY), across every worker. No data.',
  )}`.execute(db);
  await sql`comment on column queue_slots.source_id is ${sql.lit('The source the slot belongs to.')}`.execute(
    db,
  );
  await sql`comment on column queue_slots.slot is ${sql.lit('1..INSIGHTS_SOURCE_CONCURRENCY.')}`.execute(db);

  await sql`create table queue_workers (
    worker_id text primary key,
    host text not null,
    pid integer not null,
    concurrency integer not null,
    started_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    stopped_at timestamptz,
    windows_done integer not null default 0,
    windows_failed integer not null default 0
  )`.execute(db);
  await sql`comment on table queue_workers is ${sql.lit(
    'One row per `insights-sync worker` process: its heartbeat (last_seen_at, every few seconds) and what it has done. A worker whose heartbeat is older than 30 s is not alive.',
  )}`.execute(db);
  for (const [column, text] of [
    ['worker_id', 'host:pid:start time of the worker process.'],
    ['host', 'Host name of the machine it runs on.'],
    ['pid', 'Its process id on that host.'],
    ['concurrency', 'Windows it runs at once at most (INSIGHTS_WORKER_CONCURRENCY).'],
    ['started_at', 'When it started.'],
    ['last_seen_at', 'Its last heartbeat.'],
    ['stopped_at', 'When it stopped cleanly; null while it runs, or if it was killed.'],
    ['windows_done', 'Window jobs it finished (done or open).'],
    ['windows_failed', 'Window jobs it finished as failed.'],
  ] as const)
    await sql`comment on column ${sql.ref(`queue_workers.${column}`)} is ${sql.lit(text)}`.execute(db);

  await sql`create table queue_run_checks (
    run_id integer not null,
    source_id text not null,
    resource text not null,
    checked_at timestamptz not null default now(),
    primary key (run_id, source_id, resource)
  )`.execute(db);
  await sql`comment on table queue_run_checks is ${sql.lit(
    'Queued runs: the source and resource whose stored server reading a worker of the run has checked (once per run, as an in-process run does), written after any reading it re-learned. Other workers of the run skip the check. Rows of old runs are removed by later planners.',
  )}`.execute(db);
  for (const [column, text] of [
    ['run_id', 'The run (sync_runs.run_id).'],
    ['source_id', 'The source.'],
    ['resource', 'The windowed resource: feedback, survey or recordings.'],
    ['checked_at', 'When a worker checked it.'],
  ] as const)
    await sql`comment on column ${sql.ref(`queue_run_checks.${column}`)} is ${sql.lit(text)}`.execute(db);

  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  const bookkeeping = `${data}_state`;
  const writers = await sql<{ role: string }>`
    select distinct a.grantee::regrole::text as role
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      cross join lateral aclexplode(c.relacl) a
     where n.nspname = ${bookkeeping} and c.relname = 'sync_windows'
       and a.grantee <> 0 and a.grantee <> c.relowner and a.privilege_type = 'UPDATE'`.execute(db);
  for (const table of TABLES) {
    await sql`alter table ${sql.id(data, table)} set schema ${sql.id(bookkeeping)}`.execute(db);
    for (const { role } of writers.rows)
      await sql`grant select, insert, update, delete on ${sql.id(bookkeeping, table)} to ${sql.raw(role)}`.execute(
        db,
      );
  }
}

const TABLES = ['queue_slots', 'queue_workers', 'queue_run_checks'];

export async function down(db: AnyDb): Promise<void> {
  await sql`drop table queue_run_checks`.execute(db);
  await sql`drop table queue_workers`.execute(db);
  await sql`drop table queue_slots`.execute(db);
}
