import type pg from 'pg';

/**
 * The warehouse as PostgreSQL's catalog describes it: each table and view of one schema with
 * its comment, its columns with theirs, and its keys. Read live, so what is generated from it
 * (sources.yml) names only what exists.
 */
export interface CatalogRelation {
  name: string;
  kind: 'table' | 'view';
  comment: string | null;
  columns: { name: string; comment: string | null }[];
  /** The primary key's columns, then each unique constraint's. */
  keys: string[][];
  foreignKeys: { columns: string[]; table: string; references: string[] }[];
}

type Queryable = Pick<pg.ClientBase, 'query'>;

export async function readCatalog(db: Queryable, schema: string): Promise<CatalogRelation[]> {
  const relations = await db.query<{ name: string; kind: 'table' | 'view'; comment: string | null }>(
    `select c.relname as name,
            case when c.relkind in ('v', 'm') then 'view' else 'table' end as kind,
            obj_description(c.oid, 'pg_class') as comment
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm')
      order by c.relkind in ('v', 'm'), c.relname`,
    [schema],
  );
  const columns = await db.query<{ relation: string; name: string; comment: string | null }>(
    `select c.relname as relation, a.attname as name, col_description(c.oid, a.attnum) as comment
       from pg_attribute a
       join pg_class c on c.oid = a.attrelid
       join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm') and a.attnum > 0 and not a.attisdropped
      order by c.relname, a.attnum`,
    [schema],
  );
  const constraints = await db.query<{
    relation: string;
    type: 'p' | 'u' | 'f';
    columns: string[];
    target: string | null;
    target_columns: string[] | null;
  }>(
    `select c.relname as relation, k.contype::text as type,
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
       -- A foreign key into another schema is no relationship within this source.
       left join pg_class f on f.oid = k.confrelid and f.relnamespace = n.oid
      where n.nspname = $1 and k.contype in ('p', 'u', 'f')
      order by c.relname, k.contype, k.conname`,
    [schema],
  );
  return relations.rows.map((r) => {
    const own = constraints.rows.filter((k) => k.relation === r.name);
    return {
      name: r.name,
      kind: r.kind,
      comment: r.comment,
      columns: columns.rows
        .filter((c) => c.relation === r.name)
        .map((c) => ({ name: c.name, comment: c.comment })),
      keys: own.filter((k) => k.type === 'p' || k.type === 'u').map((k) => k.columns),
      foreignKeys: own
        .filter((k) => k.type === 'f' && k.target !== null)
        .map((k) => ({ columns: k.columns, table: k.target ?? '', references: k.target_columns ?? [] })),
    };
  });
}
