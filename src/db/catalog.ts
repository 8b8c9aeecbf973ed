import type pg from 'pg';

/**
 * The warehouse as PostgreSQL describes it: every table and view of the given schemas (the data
 * schema, and for the documentation the bookkeeping schema) with its comment, columns, keys and
 * indexes. docs/warehouse.md (scripts/warehouse-docs) and dbt's sources.yml
 * (src/dbt) are generated from it, so both say what the live schema says.
 */
export interface LiveSchema {
  relations: Relation[];
}

export interface Relation {
  /** The schema it is in: the first of those introspected is the data schema. */
  schema: string;
  name: string;
  kind: 'table' | 'view';
  comment: string | null;
  columns: Column[];
  primaryKey: string[];
  unique: { name: string; columns: string[] }[];
  foreignKeys: { columns: string[]; table: string; references: string[] }[];
  /** Indexes other than those of the primary key and unique constraints. */
  indexes: { name: string; definition: string }[];
}

export interface Column {
  name: string;
  /** As PostgreSQL writes it (format_type), e.g. `timestamp with time zone`. */
  type: string;
  /** The short type name (pg_type.typname), e.g. `timestamptz`. */
  shortType: string;
  notNull: boolean;
  comment: string | null;
}

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * Names are unique across the schemas introspected (the bookkeeping schema holds what moved out of
 * the data schema), so the parts below are matched to their relation by name.
 */
export async function introspect(db: Queryable, schema: string | readonly string[]): Promise<LiveSchema> {
  const schemas = typeof schema === 'string' ? [schema] : [...schema];
  // Schema by schema; tables first, in the order the migrations created them (oid order in a
  // fresh database), the migrator's own bookkeeping last among them; then the views.
  const relations = await db.query<{ schema: string; name: string; relkind: string; comment: string | null }>(
    `select n.nspname as schema, c.relname as name, c.relkind::text as relkind,
            obj_description(c.oid, 'pg_class') as comment
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = any($1::name[]) and c.relkind in ('r', 'p', 'v', 'm')
      order by array_position($1::name[], n.nspname), c.relkind in ('v', 'm'),
               c.relname like 'kysely\\_migration%', c.oid`,
    [schemas],
  );
  const columns = await db.query<{
    relation: string;
    name: string;
    type: string;
    short_type: string;
    not_null: boolean;
    comment: string | null;
  }>(
    `select c.relname as relation, a.attname as name, format_type(a.atttypid, a.atttypmod) as type,
            t.typname as short_type, a.attnotnull as not_null, col_description(c.oid, a.attnum) as comment
       from pg_attribute a
       join pg_class c on c.oid = a.attrelid
       join pg_namespace n on n.oid = c.relnamespace
       join pg_type t on t.oid = a.atttypid
      where n.nspname = any($1::name[]) and c.relkind in ('r', 'p', 'v', 'm') and a.attnum > 0 and not a.attisdropped
      order by c.relname, a.attnum`,
    [schemas],
  );
  const constraints = await db.query<{
    relation: string;
    name: string;
    type: string;
    columns: string[];
    target: string | null;
    target_columns: string[] | null;
  }>(
    `select c.relname as relation, k.conname as name, k.contype::text as type,
            array(select a.attname::text from unnest(k.conkey) with ordinality u(attnum, i)
                  join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.attnum order by u.i) as columns,
            f.relname as target,
            case when k.contype = 'f' then
              array(select a.attname::text from unnest(k.confkey) with ordinality u(attnum, i)
                    join pg_attribute a on a.attrelid = k.confrelid and a.attnum = u.attnum order by u.i)
            end as target_columns
       from pg_constraint k
       join pg_class c on c.oid = k.conrelid
       join pg_namespace n on n.oid = c.relnamespace
       -- A foreign key into a schema not introspected is no relationship within this warehouse.
       left join pg_class f on f.oid = k.confrelid
             and f.relnamespace in (select oid from pg_namespace where nspname = any($1::name[]))
      where n.nspname = any($1::name[]) and k.contype in ('p', 'u', 'f')
      order by c.relname, k.conname`,
    [schemas],
  );
  const indexes = await db.query<{ relation: string; name: string; definition: string }>(
    `select c.relname as relation, i.relname as name, pg_get_indexdef(x.indexrelid) as definition
       from pg_index x
       join pg_class c on c.oid = x.indrelid
       join pg_class i on i.oid = x.indexrelid
       join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = any($1::name[])
        and not exists (select 1 from pg_constraint k where k.conindid = x.indexrelid and k.contype in ('p', 'u'))
      order by c.relname, i.relname`,
    [schemas],
  );

  return {
    relations: relations.rows.map((r) => {
      const own = constraints.rows.filter((k) => k.relation === r.name);
      return {
        schema: r.schema,
        name: r.name,
        kind: r.relkind === 'v' || r.relkind === 'm' ? 'view' : 'table',
        comment: r.comment,
        columns: columns.rows
          .filter((c) => c.relation === r.name)
          .map((c) => ({
            name: c.name,
            type: c.type,
            shortType: c.short_type,
            notNull: c.not_null,
            comment: c.comment,
          })),
        primaryKey: own.find((k) => k.type === 'p')?.columns ?? [],
        unique: own.filter((k) => k.type === 'u').map((k) => ({ name: k.name, columns: k.columns })),
        foreignKeys: own
          .filter((k) => k.type === 'f')
          .map((k) => ({ columns: k.columns, table: k.target ?? '?', references: k.target_columns ?? [] })),
        indexes: indexes.rows
          .filter((i) => i.relation === r.name)
          .map((i) => ({ name: i.name, definition: indexColumns(i.definition) })),
      };
    }),
  };
}

/** `CREATE INDEX x ON s.t USING btree (url, dt) WHERE (...)` -> `(url, dt) where (...)` */
function indexColumns(definition: string): string {
  const match = / USING (\w+) (.*)$/.exec(definition);
  if (!match) return definition;
  const [, method, rest = ''] = match;
  const [columns, where] = rest.split(' WHERE ');
  return `${method === 'btree' ? '' : `${method} `}${columns}${where === undefined ? '' : ` where ${where}`}`;
}
