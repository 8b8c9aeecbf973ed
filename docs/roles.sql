-- insights-sync: the database roles it needs, with least privilege.
--
-- Run once, in the warehouse database, as a superuser or a role with CREATEROLE that may grant
-- on that database:
--
--   psql "postgres://admin@host:5432/warehouse" -v ON_ERROR_STOP=1 -f docs/roles.sql
--
-- It creates:
--   insights_sync     the tool (migrate, sync, backfill, schedule, serve, status, forget). It owns
--                     the schema `insights` and everything the migrations create in it, and has
--                     no other right: not superuser, no CREATEDB, no CREATEROLE, no other schema.
--   insights_analyst  read-only: SELECT on every table and view of the schema, including those
--                     later migrations add. A group: people and BI tools log in as members.
-- Other names (or another INSIGHTS_SCHEMA): replace insights_sync, insights_analyst and insights
-- in a copy of this file. test/reliability/roles.test.ts runs this file as it is written.

-- 1. The tool.
create role insights_sync login nosuperuser nocreatedb nocreaterole noreplication;
-- The schema exists before the first `migrate` and belongs to the tool, so the tool needs no
-- CREATE on the database. TEMPORARY: the loader stages each window's rows in temporary tables.
create schema insights authorization insights_sync;
do $$
begin
  execute format('grant connect, temporary on database %I to insights_sync', current_database());
end $$;
-- Then set its password (psql: \password insights_sync) and use it in DATABASE_URL:
--   DATABASE_URL=postgres://insights_sync:<password>@host:5432/warehouse

-- 2. Analysts: read-only.
create role insights_analyst nologin;
do $$
begin
  execute format('grant connect on database %I to insights_analyst', current_database());
end $$;
grant usage on schema insights to insights_analyst;
grant select on all tables in schema insights to insights_analyst;
-- Tables and views the tool's future migrations create are readable too.
alter default privileges for role insights_sync in schema insights grant select on tables to insights_analyst;
-- Each person or tool gets a login of its own in the group, e.g. for Metabase:
--   create role metabase login in role insights_analyst;  then \password metabase
--
-- With `pii: keep` (the default) analysts read the visitors' personal data (visitors, raw,
-- rejects, webhook_events). To keep it out of the warehouse altogether, set INSIGHTS_PII=hash or
-- drop before the first sync (README, "Privacy").
