import { type Kysely, sql } from 'kysely';

/**
 * The inventory of unknown fields (schema_drift, 0027) covers the snapshot resources too. Frozen
 * once shipped.
 *
 * Tests, their per-variant results and heatmaps may carry fields the spec does not describe as
 * the day-windowed items do: each snapshot's load now counts them, per source and resource (a
 * test's variants under `results[].`), so the CHECK on resource lists every resource of the
 * registry (src/schemas/resource-names.ts) as it stood here, by hand: migrations do not import
 * the app.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const CONSTRAINT = 'schema_drift_resource_check';

async function bookkeeping(db: AnyDb): Promise<string> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return `${data}_state`;
}

async function constrain(db: AnyDb, resources: readonly string[], comment: string): Promise<void> {
  const schema = await bookkeeping(db);
  const table = sql.id(schema, 'schema_drift');
  const list = sql.join(resources.map((r) => sql.lit(r)));
  await sql`alter table ${table} drop constraint ${sql.id(CONSTRAINT)},
            add constraint ${sql.id(CONSTRAINT)} check (resource in (${list}))`.execute(db);
  await sql`comment on column ${sql.id(schema, 'schema_drift', 'resource')} is ${sql.lit(comment)}`.execute(
    db,
  );
}

export async function up(db: AnyDb): Promise<void> {
  await constrain(
    db,
    ['feedback', 'survey', 'recordings', 'abtesting', 'personalization', 'heatmaps'],
    'The resource whose items carry the field: feedback, survey, recordings, abtesting, personalization or heatmaps (a field of the per-variant results sits under results[]).',
  );
}

export async function down(db: AnyDb): Promise<void> {
  const schema = await bookkeeping(db);
  await sql`delete from ${sql.id(schema, 'schema_drift')}
             where resource not in ('feedback', 'survey', 'recordings')`.execute(db);
  await constrain(
    db,
    ['feedback', 'survey', 'recordings'],
    'The resource whose items carry the field: feedback, survey or recordings.',
  );
}
