import { type Kysely, sql } from 'kysely';

/**
 * History of tests and heatmaps. Frozen once shipped, like the others.
 *
 * ab_tests, personalization_tests and heatmaps keep only the latest copy of each row. Their
 * *_versions tables keep every set of attribute values a row has had, dated: valid_from (when a
 * run first stored them) to valid_to (when a run stored different ones; null for the current
 * version). A deletion at the service is a version too (removed = true), and so is a comeback.
 * src/load/snapshot-versions.ts writes them in the snapshot's own transaction.
 *
 * Seeded from the rows already stored: their current values, valid from last_changed_at (earlier
 * values were not kept), and for a removed row a removal version from removed_at.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

interface Versioned {
  versions: string;
  table: string;
  what: string;
  /** The attributes a version tracks, with their SQL type and comment. */
  attributes: ReadonlyArray<{ name: string; type: string; notNull: boolean; comment: string }>;
}

const TEST_ATTRIBUTES = [
  { name: 'test_name', type: 'text', notNull: true, comment: 'Name of the test in this version (spec 2.1).' },
  {
    name: 'url',
    type: 'text',
    notNull: true,
    comment: 'Page address the test applied to in this version (spec 2.1).',
  },
  {
    name: 'goal_profile_id',
    type: 'text',
    notNull: true,
    comment: 'Identifier of the goal profile in this version (spec 2.1).',
  },
] as const;

const VERSIONED: readonly Versioned[] = [
  { versions: 'ab_test_versions', table: 'ab_tests', what: 'A/B test', attributes: TEST_ATTRIBUTES },
  {
    versions: 'personalization_test_versions',
    table: 'personalization_tests',
    what: 'personalization test',
    attributes: TEST_ATTRIBUTES,
  },
  {
    versions: 'heatmap_versions',
    table: 'heatmaps',
    what: 'heatmap',
    attributes: [
      {
        name: 'name',
        type: 'text',
        notNull: true,
        comment: 'Name of the heatmap in this version (spec 2.7).',
      },
      { name: 'url', type: 'text', notNull: true, comment: 'Page address in this version (spec 2.7).' },
      {
        name: 'rule',
        type: 'text',
        notNull: true,
        comment: 'Rule of the heatmap in this version (spec 2.7).',
      },
      {
        name: 'start_time',
        type: 'timestamptz',
        notNull: true,
        comment: 'Start of the heatmap in this version (spec 2.7).',
      },
      {
        name: 'end_time',
        type: 'timestamptz',
        notNull: false,
        comment: 'End of the heatmap in this version (spec 2.7); null when no end was set.',
      },
      {
        name: 'heatmap_limit',
        type: 'bigint',
        notNull: true,
        comment: 'heatmap_limit in this version (spec 2.7; its meaning is not documented by the service).',
      },
    ],
  },
];

const SOURCE_ID =
  'The configured source (a Website Insights account read through one base URL) this row came from; see sources.';

export async function up(db: AnyDb): Promise<void> {
  for (const v of VERSIONED) {
    const attributes = sql.join(
      v.attributes.map((a) => sql`${sql.id(a.name)} ${sql.raw(a.type)}${a.notNull ? sql` not null` : sql``}`),
    );
    await sql`
      create table ${sql.table(v.versions)} (
        source_id text not null references sources (source_id),
        id text not null,
        valid_from timestamptz not null,
        valid_to timestamptz,
        ${attributes},
        removed boolean not null,
        constraint ${sql.id(`${v.versions}_pkey`)} primary key (source_id, id, valid_from),
        constraint ${sql.id(`${v.versions}_valid_range`)} check (valid_to is null or valid_to > valid_from)
      )`.execute(db);
    // One current version per row, whatever runs write at the same time.
    await sql`create unique index ${sql.id(`${v.versions}_current_idx`)}
              on ${sql.table(v.versions)} (source_id, id) where valid_to is null`.execute(db);
    await seed(db, v);
    await comment(db, v);
  }
}

export async function down(db: AnyDb): Promise<void> {
  for (const v of [...VERSIONED].reverse()) await sql`drop table ${sql.table(v.versions)}`.execute(db);
}

/**
 * A stored row's current values, valid from its last change; a removed row's values end at
 * removed_at, where its removal version begins.
 */
async function seed(db: AnyDb, v: Versioned): Promise<void> {
  const names = v.attributes.map((a) => sql.id(a.name));
  const columns = sql.join([sql`source_id`, sql`id`, sql`valid_from`, sql`valid_to`, ...names, sql`removed`]);
  await sql`
    insert into ${sql.table(v.versions)} (${columns})
    select source_id, id, last_changed_at, removed_at, ${sql.join(names)}, false
      from ${sql.table(v.table)}
     where removed_at is null or removed_at > last_changed_at
    union all
    select source_id, id, removed_at, null, ${sql.join(names)}, true
      from ${sql.table(v.table)}
     where removed_at is not null`.execute(db);
}

async function comment(db: AnyDb, v: Versioned): Promise<void> {
  const on = (column: string, text: string) =>
    sql`comment on column ${sql.ref(`${v.versions}.${column}`)} is ${sql.lit(text)}`.execute(db);
  await sql`comment on table ${sql.table(v.versions)} is ${sql.lit(
    `Every version of each ${v.what} of ${v.table}: one row per set of values it has had, valid from valid_from to valid_to (null: the current version). A run that finds the ${v.what} changed closes its current version and opens a new one at the same instant; a run that finds it unchanged writes nothing. A deletion at the service (${v.table}.removed_at set) is a version with removed = true, a comeback another with removed = false. The ${v.what} as of an instant T: valid_from <= T and (valid_to is null or valid_to > T). Rows stored before this table existed start at their last_changed_at: earlier values were not kept.`,
  )}`.execute(db);
  await on('source_id', SOURCE_ID);
  await on('id', `Identifier of the ${v.what} (${v.table}.id).`);
  await on(
    'valid_from',
    'When a run first stored these values (the run that saw them, not a time the service reports). Key with source_id and id.',
  );
  await on(
    'valid_to',
    'When a run stored different values (the next version begins at this instant); null for the current version. At most one current version per source and id.',
  );
  for (const a of v.attributes) await on(a.name, a.comment);
  await on(
    'removed',
    `True for a removal version: the service deleted the ${v.what} (see ${v.table}.removed_at for the evidence it takes); the other columns hold its last values.`,
  );
}
