import { type Kysely, sql } from 'kysely';

/**
 * What a server does with an ISO instant in startdate and enddate. Frozen once shipped.
 *
 * The spec's bounds are days and there is no paging, so a day above a server's cap could only be
 * flagged truncated. The real service's own client sends instants; a server that filters by them
 * can be read in time slices, and the day is then whole. A run asks once (only when a day fills
 * the cap) and server_readings keeps the answer beside the rest of what was learned of the server;
 * `status` shows it.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const COMMENT =
  'What the server did, the last time a day filled its cap, with an ISO instant (YYYY-MM-DDThh:mm:ss.sssZ) in startdate and enddate: honoured (it filtered by the instant: such days are read in time slices, and whole), ignored (it dropped the time) or refused (HTTP 400). Null until a day filled the cap.';

async function table(db: AnyDb): Promise<{ schema: string }> {
  const { rows } = await sql<{ data: string }>`select current_schema() as data`.execute(db);
  const data = rows[0]?.data;
  if (data === undefined) throw new Error('no current schema: the connection has no search_path');
  return { schema: `${data}_state` };
}

export async function up(db: AnyDb): Promise<void> {
  const { schema } = await table(db);
  await sql`alter table ${sql.id(schema, 'server_readings')}
    add column instants text check (instants in ('honoured', 'ignored', 'refused'))`.execute(db);
  await sql`comment on column ${sql.id(schema, 'server_readings', 'instants')} is ${sql.lit(COMMENT)}`.execute(
    db,
  );
}

export async function down(db: AnyDb): Promise<void> {
  const { schema } = await table(db);
  await sql`alter table ${sql.id(schema, 'server_readings')} drop column instants`.execute(db);
}
