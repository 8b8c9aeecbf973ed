import { type Kysely, sql } from 'kysely';

/**
 * Every function of the data schema works whatever the caller's search_path. Frozen once shipped.
 *
 * PostgreSQL binds a view's functions when the view is created, but a function's body is resolved
 * when it runs, with the search_path of the session that calls it. chi_square_p_value (0012)
 * called two_sided_p_value unqualified, so reading sample_ratio_mismatch failed on every
 * connection whose search_path lacks the data schema: Metabase's and dbt's defaults ("$user",
 * public). Each function now names what it calls with its schema and pins its own search_path
 * (pg_catalog, pg_temp): it no longer depends on the caller's, and a function or table a caller
 * planted in a schema of its search_path cannot stand in for the one meant. The triggers (0001,
 * 0006) run as the writing role, whose search_path is the warehouse's; pinned too, for the
 * same reasons.
 *
 * The data schema is configurable (INSIGHTS_SCHEMA): its name is the migration's current_schema().
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const PINNED = 'pg_catalog, pg_temp';

/** Functions whose body calls nothing of the warehouse: pinning is all they need. */
const SELF_CONTAINED = ['two_sided_p_value(double precision)', 'watermark_forward_only()'] as const;

export async function up(db: AnyDb): Promise<void> {
  const data = await dataSchema(db);
  const schema = quote(data);
  for (const signature of SELF_CONTAINED)
    await sql`alter function ${sql.raw(`${schema}.${signature}`)} set search_path = ${sql.raw(PINNED)}`.execute(
      db,
    );
  await sql`create or replace function ${sql.id(data, 'chi_square_p_value')}(x double precision, df integer)
    returns double precision language plpgsql immutable strict parallel safe
    set search_path = ${sql.raw(PINNED)} as ${sql.lit(chiSquareBody(`${schema}.`))}`.execute(db);
  await sql`create or replace function ${sql.id(data, 'key_collision_set_aside')}() returns trigger
    language plpgsql set search_path = ${sql.raw(PINNED)} as ${sql.lit(setAsideBody(`${schema}.`))}`.execute(
    db,
  );
}

export async function down(db: AnyDb): Promise<void> {
  const data = await dataSchema(db);
  const schema = quote(data);
  for (const signature of SELF_CONTAINED)
    await sql`alter function ${sql.raw(`${schema}.${signature}`)} reset search_path`.execute(db);
  // CREATE OR REPLACE keeps a SET clause the new definition does not name: reset it first.
  await sql`alter function ${sql.id(data, 'chi_square_p_value')}(double precision, integer) reset search_path`.execute(
    db,
  );
  await sql`alter function ${sql.id(data, 'key_collision_set_aside')}() reset search_path`.execute(db);
  await sql`create or replace function ${sql.id(data, 'chi_square_p_value')}(x double precision, df integer)
    returns double precision language plpgsql immutable strict parallel safe
    as ${sql.lit(chiSquareBody(''))}`.execute(db);
  await sql`create or replace function ${sql.id(data, 'key_collision_set_aside')}() returns trigger
    language plpgsql as ${sql.lit(setAsideBody(''))}`.execute(db);
}

async function dataSchema(db: AnyDb): Promise<string> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return data;
}

/** The body of 0012, two_sided_p_value named with `prefix` (the quoted schema and a dot). */
function chiSquareBody(prefix: string): string {
  return `
    declare
      h double precision := x / 2;
      total double precision := 0;
      log_term double precision;
    begin
      if df < 1 or x = 'NaN'::double precision then return null; end if;
      if x <= 0 then return 1; end if;
      if df % 2 = 0 then
        log_term := -h;
        for j in 0 .. df / 2 - 1 loop
          if j > 0 then log_term := log_term + ln(h) - ln(j); end if;
          if log_term > -700 then total := total + exp(log_term); end if;
        end loop;
      else
        total := ${prefix}two_sided_p_value(sqrt(x));
        -- Gamma(3/2) = sqrt(pi) / 2.
        log_term := -h + 0.5 * ln(h) - ln(sqrt(pi()) / 2);
        for j in 1 .. (df - 1) / 2 loop
          if j > 1 then log_term := log_term + ln(h) - ln(j - 0.5); end if;
          if log_term > -700 then total := total + exp(log_term); end if;
        end loop;
      end if;
      return least(1, total);
    end`;
}

/** The body of 0006, key_collisions named with `prefix`. */
function setAsideBody(prefix: string): string {
  return `
    declare
      item_key text;
    begin
      if tg_table_name = 'feedback' then
        item_key := old.id || '/' || old.feedback_id;
      elsif tg_table_name = 'survey_answers' then
        item_key := old.id || '/' || old.question_id;
      else
        item_key := old.id;
      end if;
      insert into ${prefix}key_collisions (source_id, resource, item_key, dt, raw)
      values (old.source_id, tg_argv[0], item_key, old.dt, old.raw)
      on conflict do nothing;
      return new;
    end`;
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
