import type pg from 'pg';
import { introspect } from '../db/catalog.js';

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
  const live = await introspect(db, schema);
  // Tables before views, each by name: the order of sources.yml.
  const ordered = [...live.relations].sort(
    (a, b) =>
      Number(a.kind === 'view') - Number(b.kind === 'view') ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
  return ordered.map((r) => ({
    name: r.name,
    kind: r.kind,
    comment: r.comment,
    columns: r.columns.map((c) => ({ name: c.name, comment: c.comment })),
    keys: [...(r.primaryKey.length > 0 ? [r.primaryKey] : []), ...r.unique.map((u) => u.columns)],
    foreignKeys: r.foreignKeys.filter((k) => k.table !== '?'),
  }));
}
