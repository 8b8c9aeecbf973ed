import { type Kysely, type RawBuilder, sql } from 'kysely';

/**
 * Value ranges: the columns follow the data. Frozen once shipped, like the others.
 *
 * - feedback.rating, recordings.duration and heatmaps.heatmap_limit become bigint, like every
 *   other integer the API sends (ids, complete, total). The spec says "integer" and nothing of
 *   its range; the schemas accept up to 2^53 - 1, and a value above int4 must load, not fail its
 *   whole day or snapshot. Beyond 2^53 - 1 the item is rejected (src/extract/validate.ts).
 * - The comments of rejects say what the table now holds: items that fail validation or that
 *   PostgreSQL cannot store, and how the stored copy of the latter differs.
 *
 * A view that reads a column blocks ALTER COLUMN TYPE (feedback_enriched and daily_activity of
 * 0004, and whatever a later view reads). Each such view, and each view built on one of them, is
 * dropped and recreated from its own definition as the database holds it (pg_get_viewdef), with
 * its options, comments and grants: the views stay exactly what their migrations made them,
 * whichever migrations those were.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const WIDENED: ReadonlyArray<{ table: string; column: string }> = [
  { table: 'feedback', column: 'rating' },
  { table: 'recordings', column: 'duration' },
  { table: 'heatmaps', column: 'heatmap_limit' },
];

export async function up(db: AnyDb): Promise<void> {
  await alterTypes(db, sql`bigint`);
  for (const [target, comment] of REJECT_COMMENTS.up)
    await sql`comment on ${target} is ${sql.lit(comment)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  // Fails, naming the value, when a row holds more than an integer can: nothing is changed then.
  await alterTypes(db, sql`integer`);
  for (const [target, comment] of REJECT_COMMENTS.down)
    await sql`comment on ${target} is ${sql.lit(comment)}`.execute(db);
}

async function alterTypes(db: AnyDb, type: RawBuilder<unknown>): Promise<void> {
  const views = await dependentViews(db);
  for (const view of [...views].reverse()) await sql`drop view ${sql.id(view.schema, view.name)}`.execute(db);
  for (const { table, column } of WIDENED)
    await sql`alter table ${sql.table(table)} alter column ${sql.id(column)} type ${type}`.execute(db);
  for (const view of views) await recreate(db, view);
}

interface SavedView {
  schema: string;
  name: string;
  definition: string;
  options: string[] | null;
  comment: string | null;
  columns: Array<{ name: string; comment: string | null }>;
  grants: Array<{ grantee: string | null; privilege: string; grantable: boolean }>;
}

/**
 * The views of this schema that read a widened column, directly or through other views, in an
 * order to create them in (a view after every view it reads); drop them in reverse.
 */
async function dependentViews(db: AnyDb): Promise<SavedView[]> {
  const targets = sql.join(WIDENED.map(({ table, column }) => sql`(${table}, ${column})`));
  const found = await sql<{ oid: number; schema: string; name: string; kind: string; level: number }>`
    with recursive reads(view, level) as (
      select r.ev_class, 1
        from pg_attribute a
        join pg_class t on t.oid = a.attrelid and t.relnamespace = current_schema()::regnamespace
        join pg_depend d on d.refclassid = 'pg_class'::regclass and d.refobjid = a.attrelid
                        and d.refobjsubid = a.attnum and d.classid = 'pg_rewrite'::regclass
        join pg_rewrite r on r.oid = d.objid and r.ev_class <> a.attrelid
       where (t.relname::text, a.attname::text) in (${targets})
      union all
      select r.ev_class, reads.level + 1
        from reads
        join pg_depend d on d.refclassid = 'pg_class'::regclass and d.refobjid = reads.view
                        and d.classid = 'pg_rewrite'::regclass
        join pg_rewrite r on r.oid = d.objid and r.ev_class <> reads.view
    )
    select c.oid::int as oid, n.nspname as schema, c.relname as name, c.relkind::text as kind,
           max(reads.level)::int as level
      from reads
      join pg_class c on c.oid = reads.view
      join pg_namespace n on n.oid = c.relnamespace
     group by c.oid, n.nspname, c.relname, c.relkind
     order by level, schema, name`.execute(db);

  const saved: SavedView[] = [];
  for (const view of found.rows) {
    // A materialized view would need its indexes and data kept too; none exists, and a later one
    // must not be dropped with half of it lost.
    if (view.kind !== 'v')
      throw new Error(
        `${view.name} (relkind ${view.kind}) reads a column 0009 widens; only plain views are handled`,
      );
    const about = await sql<{ definition: string; options: string[] | null; comment: string | null }>`
      select pg_get_viewdef(c.oid) as definition, c.reloptions::text[] as options,
             obj_description(c.oid, 'pg_class') as comment
        from pg_class c where c.oid = ${view.oid}::oid`.execute(db);
    const columns = await sql<{ name: string; comment: string | null }>`
      select attname as name, col_description(attrelid, attnum) as comment
        from pg_attribute where attrelid = ${view.oid}::oid and attnum > 0 and not attisdropped
       order by attnum`.execute(db);
    // The owner's own rights come with the new view; everyone else's are granted again.
    const grants = await sql<{ grantee: string | null; privilege: string; grantable: boolean }>`
      select r.rolname as grantee, x.privilege_type as privilege, x.is_grantable as grantable
        from pg_class c
        cross join lateral aclexplode(c.relacl) x
        left join pg_roles r on r.oid = x.grantee
       where c.oid = ${view.oid}::oid and x.grantee <> c.relowner
       order by 1, 2`.execute(db);
    const row = about.rows[0];
    if (row === undefined) throw new Error(`view ${view.name} vanished while being read`);
    // pg_get_viewdef ends the query with a semicolon, which CREATE VIEW ... AS must not get.
    const definition = row.definition.trim().replace(/;$/, '');
    saved.push({
      schema: view.schema,
      name: view.name,
      ...row,
      definition,
      columns: columns.rows,
      grants: grants.rows,
    });
  }
  return saved;
}

async function recreate(db: AnyDb, view: SavedView): Promise<void> {
  const options =
    view.options === null || view.options.length === 0
      ? sql``
      : sql`with (${sql.raw(view.options.join(', '))})`;
  const name = sql.id(view.schema, view.name);
  await sql`create view ${name} ${options} as ${sql.raw(view.definition)}`.execute(db);
  if (view.comment !== null) await sql`comment on view ${name} is ${sql.lit(view.comment)}`.execute(db);
  for (const column of view.columns) {
    if (column.comment === null) continue;
    await sql`comment on column ${sql.id(view.schema, view.name, column.name)} is ${sql.lit(column.comment)}`.execute(
      db,
    );
  }
  for (const grant of view.grants) {
    // A grant to PUBLIC has grantee 0, which names no role.
    const grantee = grant.grantee === null ? sql`public` : sql.id(grant.grantee);
    await sql`grant ${sql.raw(grant.privilege)} on ${name} to ${grantee} ${grant.grantable ? sql`with grant option` : sql``}`.execute(
      db,
    );
  }
}

/** The comments of 0004 (down) and what rejects holds from now on (up). */
const REJECT_COMMENTS = {
  up: [
    [
      sql`table rejects`,
      'Items the API returned that failed validation or hold a value PostgreSQL cannot store, once each per source, resource and content; the rest of their day loads. A whole day fails only when its response as a whole looks broken (docs/reliability.md, "Dirty data").',
    ],
    [
      sql`column rejects.item`,
      'The item as received (JSON). U+0000 and unpaired UTF-16 surrogates, which jsonb cannot hold, appear as U+FFFD, and nesting below 64 levels is cut; the error says when.',
    ],
    [
      sql`column rejects.error`,
      'What is wrong with the item: each problem as `field: message`, e.g. `comment: contains U+0000, which PostgreSQL text cannot hold`.',
    ],
  ],
  down: [
    [
      sql`table rejects`,
      'Items the API returned that failed validation, verbatim, once each per source, resource and content. A whole day fails only when too many of its items are bad.',
    ],
    [sql`column rejects.item`, 'The item as received (JSON).'],
    [sql`column rejects.error`, 'What is wrong with the item.'],
  ],
} satisfies Record<'up' | 'down', Array<[RawBuilder<unknown>, string]>>;
