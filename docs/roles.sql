-- insights-sync: the database roles it needs, with least privilege (docs/security.md).
--
-- Run once, in the warehouse database, as a superuser (or a role with CREATEROLE that owns the
-- database), before the first `insights-sync migrate`:
--
--   psql "postgres://admin@host:5432/warehouse" -v ON_ERROR_STOP=1 -f docs/roles.sql
--
-- It creates five roles, none of them superuser, none with CREATEDB, CREATEROLE or REPLICATION:
--   insights_owner    runs `insights-sync migrate` and nothing else. Owns the data schema
--                     `insights`, the bookkeeping schema `insights_state` (the tool's own tables:
--                     runs, ledger, watermarks, rejects, webhook deliveries, locks, migrations),
--                     the queue schema `insights_queue` (pg-boss's tables, which `migrate`
--                     installs) and every table, view and function in them: the only role that
--                     runs DDL.
--   insights_sync     runs sync, backfill, schedule, worker, forget and unforget: reads and writes
--                     the tables of the schemas, stages rows in temporary tables, takes the run
--                     lock, creates a source's queue through the owner's create_window_queue().
--                     Owns nothing, in any schema.
--   insights_serve    runs serve and `webhooks replay` (internet-facing): writes the webhook
--                     deliveries, and the rows they carry only through the owner's
--                     merge_webhook_rows() (never an API value), reads what it checks, takes the
--                     suppression list's shared lock through the owner's share_suppression_lock().
--                     Owns nothing; its lock waits and idle transactions are cut short (step 5).
--   insights_analyst  read-only: SELECT on every table and view of the data schema, including
--                     those later migrations add; no access to the bookkeeping schema (it reads
--                     sync_health and day_completeness, the owner's views of it, instead). A
--                     group: people and BI tools log in as members of it.
--   insights_monitor  read-only on both schemas: what `status`, `report` and `check` read (the
--                     ledger, the runs, the watermarks). A group, member of insights_analyst: the
--                     data team's logins that run the report or watch the loads join it.
-- `status` and `report` only read: the owner, the sync role and members of insights_monitor
-- can run them (an analyst or the serve role is told so in one line). They refuse to read a
-- warehouse whose schemas hold anything not owned by insights_owner (or a superuser).
--
-- Why no runtime role owns anything: the owner of a view decides what runs when someone reads
-- it. A role that owned `sync_health` could replace it with a view that calls a function of its
-- own, and that function would run with the rights of whoever reads the view, a superuser too.
-- The runtime roles (one of them reachable from the internet) can change rows, never code. The
-- queue's schema is no exception: a sync role owning pg-boss's `job` table could rename it and put
-- a view calling its function in its place, run by the next superuser's `status`.
--
-- Other names (or another INSIGHTS_SCHEMA): replace insights_owner, insights_sync,
-- insights_serve, insights_analyst, insights, insights_state and insights_queue (the schemas:
-- INSIGHTS_SCHEMA followed by _state and _queue) in a copy of this file.
--
-- A warehouse set up with an earlier version of this file (one schema), as a superuser: create
-- the bookkeeping schema and the monitor group as below (`create schema insights_state
-- authorization insights_owner;`, its revoke, `create role insights_monitor ...`), then run
-- `insights-sync migrate` as the owner: migration 0014 moves the tables with their grants and
-- gives USAGE on the new schema to the roles that write them. Then the remaining lines that name
-- insights_state or insights_monitor (USAGE for the monitor, the default privileges), and the
-- create function of insights.grant_serve() again (as create or replace).
-- Set up before the queue schema changed hands (the sync role owned insights_queue), as a
-- superuser: `reassign owned by insights_sync to insights_owner;` (in this database: the sync
-- role owns nothing here), then the queue part of step 2 and its default privileges in step 3
-- below, then `insights-sync migrate` as the owner and `select insights.grant_serve()`. Until then
-- `status` refuses, in one line, to read the queue, and the planner to create a queue.
-- test/reliability/roles.test.ts runs this file as it is written (role names made unique).

create role insights_owner login nosuperuser nocreatedb nocreaterole noreplication;
create role insights_sync login nosuperuser nocreatedb nocreaterole noreplication;
create role insights_serve login nosuperuser nocreatedb nocreaterole noreplication;
create role insights_analyst nologin nosuperuser nocreatedb nocreaterole noreplication;
create role insights_monitor nologin nosuperuser nocreatedb nocreaterole noreplication in role insights_analyst;

-- 1. The database: no one connects or creates temporary tables unless granted here. (PUBLIC
-- has CONNECT and TEMPORARY on every new database by default; roles of other applications on the
-- same server then lose them on this one: grant them explicitly if they need it.)
do $$
begin
  execute format('revoke connect, temporary on database %I from public', current_database());
  execute format('grant connect on database %I to insights_owner, insights_sync, insights_serve, insights_analyst',
                 current_database());
  -- The loader stages each window's rows in temporary tables.
  execute format('grant temporary on database %I to insights_sync', current_database());
end $$;
-- Nobody creates objects in (or reads) the public schema: a function planted there could be
-- picked up by a search_path.
revoke all on schema public from public;

-- 2. The schema exists before the first `migrate` and belongs to the owner, so the owner needs no
-- CREATE on the database. Only the owner may create in it.
create schema insights authorization insights_owner;
revoke all on schema insights from public;
grant usage on schema insights to insights_sync, insights_serve, insights_analyst;
-- The bookkeeping schema: the roles that write it, not the analyst (Metabase and dbt list what
-- an analyst can use: the data).
create schema insights_state authorization insights_owner;
revoke all on schema insights_state from public;
grant usage on schema insights_state to insights_sync, insights_serve, insights_monitor;
-- The window queue's schema (pg-boss, `sync --queue` and `worker`, docs/scaling.md): the owner's.
-- `migrate` installs pg-boss's tables in it; a source's queue (a table pg-boss adds) is created by
-- the owner's function create_window_queue(), which the sync role may run. It holds job data only
-- (source, resource, day). The sync role reads and writes the jobs, the monitor reads them.
create schema insights_queue authorization insights_owner;
revoke all on schema insights_queue from public;
grant usage on schema insights_queue to insights_sync, insights_monitor;

-- 3. Rights on what the migrations create, given by the owner's default privileges: they apply
-- to every table and view `insights_owner` creates in the schema, now and in later migrations.
-- The sync role reads and writes every table (a run writes the ledger, the watermarks, the runs'
-- log, the snapshots, the windowed resources, visitors, rejects, server readings, key collisions;
-- forget deletes a visitor's rows everywhere). UPDATE on run_lock is what lets it take the run
-- lock. Neither TRUNCATE, REFERENCES nor TRIGGER: no role but the owner attaches code to a table.
-- Only the owner writes the migration state: each `migrate` takes back from every other role the
-- writes these defaults give on kysely_migration, kysely_migration_lock and pg-boss's version
-- table (the sync role keeps UPDATE on the three columns where pg-boss's maintenance stamps
-- when it ran); the runtime roles read them, and stop in one line on a schema behind or ahead.
alter default privileges for role insights_owner in schema insights
  grant select, insert, update, delete on tables to insights_sync;
alter default privileges for role insights_owner in schema insights
  grant usage on sequences to insights_sync, insights_serve;
alter default privileges for role insights_owner in schema insights
  grant select on tables to insights_analyst;
alter default privileges for role insights_owner in schema insights_state
  grant select, insert, update, delete on tables to insights_sync;
alter default privileges for role insights_owner in schema insights_state
  grant usage on sequences to insights_sync, insights_serve;
alter default privileges for role insights_owner in schema insights_state
  grant select on tables to insights_monitor;
-- The queue: the sync role plans runs and works windows (pg-boss's maintenance included: it
-- archives and deletes old jobs), the monitor reads the jobs for `status`.
alter default privileges for role insights_owner in schema insights_queue
  grant select, insert, update, delete on tables to insights_sync;
alter default privileges for role insights_owner in schema insights_queue
  grant select on tables to insights_monitor;
-- The webhook receiver gets nothing by default: the grants below, after `migrate`.

-- 4. Then, as the owner: `insights-sync migrate` (DATABASE_URL=postgres://insights_owner:...).
-- The migrations create the tables; the grants above follow them. The receiver's grants name
-- tables, so they come after the first migrate:
--
--   psql "postgres://admin@host:5432/warehouse" -v ON_ERROR_STOP=1 -f docs/roles.sql   (once)
--   DATABASE_URL=postgres://insights_owner:...@host:5432/warehouse node bin/insights-sync.js migrate
--   psql "postgres://admin@host:5432/warehouse" -v ON_ERROR_STOP=1 -c "select insights.grant_serve()"
--
-- The function below holds them so that both steps stay in this one file; it is the owner's
-- (security definer: it grants on the owner's tables) and only a superuser or the owner may run it.
create function insights.grant_serve() returns void
  language plpgsql security definer set search_path = pg_catalog, pg_temp as $$
begin
  -- What a delivery writes: its stored body (and its outcome), and the source's row when new
  -- (INSERT ... ON CONFLICT DO NOTHING: no UPDATE). DELETE on webhook_events only: a stored body
  -- of a forgotten visitor is removed on replay, and old bodies by retention.
  grant select, insert, update, delete on insights_state.webhook_events to insights_serve;
  grant select, insert on insights.sources to insights_serve;
  -- The feedback or survey answer a delivery carries, and its visitor: read, never written
  -- directly. The owner's merge_webhook_rows() (migration 0035) inserts an unknown row or
  -- visitor and fills a known row's empty columns, never changing a value already there, so
  -- the receiver cannot rewrite the API's rows (another source's e-mails, comments) by SQL.
  grant select on insights.feedback, insights.survey_answers, insights.visitors to insights_serve;
  grant execute on function insights_state.merge_webhook_rows(jsonb, jsonb, jsonb) to insights_serve;
  -- Its usual batch in one statement (migration 0042): with the receiver's own rights, it stores
  -- the deliveries and calls the two functions here.
  grant execute on function insights_state.receive_webhook_batch(jsonb, jsonb, jsonb, jsonb) to insights_serve;
  -- The suppression list's lock: a delivery holds its one row FOR KEY SHARE while it checks the
  -- list and writes, through the owner's function. Not UPDATE on the table: it would let the
  -- receiver take the row FOR UPDATE, or the table in any mode, and hold every sync up.
  grant execute on function insights_state.share_suppression_lock() to insights_serve;
  -- What it checks before writing: the suppression list, and (for the schema check at start) the
  -- migrator's own tables.
  grant select on insights_state.suppressed_visitors, insights_state.kysely_migration,
    insights_state.kysely_migration_lock to insights_serve;
end $$;
alter function insights.grant_serve() owner to insights_owner;
revoke all on function insights.grant_serve() from public;

-- 5. The receiver is reachable from the internet: whatever it holds, it holds for seconds. It
-- has INSERT on sources and webhook_events, and so may LOCK those tables in ROW EXCLUSIVE mode
-- at most: a sync window waiting on such a lock says so in its log after a few seconds. `serve`
-- and `webhooks replay` set these two on each of their connections, whatever the role's defaults
-- say (the role may change its own defaults for good); these defaults are for other clients of
-- the role. They bound a stuck receiver, not an attacker holding its password, which the log
-- line shows.
alter role insights_serve set lock_timeout = '10s';
alter role insights_serve set idle_in_transaction_session_timeout = '15s';

-- 6. Passwords (psql: \password insights_owner, and so on), then:
--   migrate:                     DATABASE_URL=postgres://insights_owner:<password>@host:5432/warehouse
--   sync, backfill, schedule:    DATABASE_URL=postgres://insights_sync:<password>@host:5432/warehouse
--   serve, webhooks replay:      DATABASE_URL=postgres://insights_serve:<password>@host:5432/warehouse
-- Each person or tool that reads gets a login of its own in the analyst group, e.g. Metabase:
--   create role metabase login in role insights_analyst;  then \password metabase
-- and those who run `status` or `report`, or a monitoring check, in the monitor group:
--   create role alice login in role insights_monitor;  then \password alice
--
-- With `pii: keep` (the default) analysts read the visitors' personal data (visitors, raw), and
-- members of insights_monitor also rejects and webhook_events (docs/analysts.md, "Who sees
-- what"). To keep it out of the warehouse altogether, set INSIGHTS_PII=hash or drop before the
-- first sync (docs/privacy.md).
