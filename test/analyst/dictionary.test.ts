import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DIAGRAM_FILE,
  mermaidHash,
  recordedHash,
  renderDocument,
  renderMermaid,
} from '../../scripts/warehouse-docs/render.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { introspect } from '../../src/db/catalog.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { documentedColumns, readWarehouseDoc, WAREHOUSE_DOC } from './warehouse-doc.js';

const REGENERATE = 'run `npm run docs:warehouse` and commit docs/warehouse.md and docs/warehouse-er.svg';

interface LiveColumn {
  relation: string;
  kind: 'table' | 'view';
  column: string;
  data_type: string;
  comment: string | null;
}

describe('the data dictionary (docs/warehouse.md) and the COMMENTs describe the live schema', () => {
  let t: TestDatabase;
  let live: LiveColumn[];

  beforeAll(async () => {
    t = await createTestDatabase();
    const rows = await sql<LiveColumn>`
      select c.table_name as relation,
             case when v.table_name is null then 'table' else 'view' end as kind,
             c.column_name as column, c.data_type,
             col_description(format('%I.%I', c.table_schema, c.table_name)::regclass, c.ordinal_position) as comment
        from information_schema.columns c
        left join information_schema.views v on v.table_schema = c.table_schema and v.table_name = c.table_name
       where c.table_schema in (${t.schema}, ${bookkeepingSchema(t.schema)})
       order by c.table_name, c.ordinal_position`.execute(t.db);
    live = rows.rows;
  });
  afterAll(() => t.drop());

  it('has a COMMENT on every table, view and column of the data and bookkeeping schemas', async () => {
    expect(live.length).toBeGreaterThan(150);
    expect(live.filter((c) => !c.comment).map((c) => `${c.relation}.${c.column}`)).toEqual([]);
    const relations = await sql<{ name: string }>`
      select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname in (${t.schema}, ${bookkeepingSchema(t.schema)}) and c.relkind in ('r', 'v', 'p', 'm')
         and obj_description(c.oid, 'pg_class') is null`.execute(t.db);
    expect(relations.rows.map((r) => r.name)).toEqual([]);
  });

  it('documents every column of every table and view, and no column that does not exist', () => {
    const key = (c: { relation: string; column: string }) => `${c.relation}.${c.column}`;
    const documented = documentedColumns();
    const liveKeys = new Set(live.map(key));
    const docKeys = new Set(documented.map(key));
    expect(
      [...liveKeys].filter((k) => !docKeys.has(k)),
      `undocumented columns: ${REGENERATE}`,
    ).toEqual([]);
    expect(
      [...docKeys].filter((k) => !liveKeys.has(k)),
      `documented but missing: ${REGENERATE}`,
    ).toEqual([]);
    expect(docKeys.size, 'a column documented twice').toBe(documented.length);
  });

  it('gives each column its type, kind and meaning as the database does', () => {
    const documented = new Map(documentedColumns().map((c) => [`${c.relation}.${c.column}`, c]));
    const differences = live.flatMap((c) => {
      const doc = documented.get(`${c.relation}.${c.column}`);
      if (!doc) return [];
      const problems: string[] = [];
      // information_schema writes `timestamp with time zone`, `ARRAY`, `USER-DEFINED`; the doc
      // shows PostgreSQL's own name, which starts the same for every type used here but arrays
      // (`integer[]`).
      const sameType = c.data_type === 'ARRAY' ? doc.type.endsWith('[]') : doc.type.startsWith(c.data_type);
      if (!sameType) problems.push(`type ${doc.type} <> ${c.data_type}`);
      if (doc.kind !== c.kind) problems.push(`kind ${doc.kind} <> ${c.kind}`);
      if (doc.meaning !== c.comment) problems.push(`meaning "${doc.meaning}" <> comment "${c.comment}"`);
      return problems.map((p) => `${c.relation}.${c.column}: ${p}`);
    });
    expect(differences, REGENERATE).toEqual([]);
  });

  it('is exactly what `npm run docs:warehouse` generates from the live schema', async () => {
    const schema = await introspect(t.pool, [t.schema, bookkeepingSchema(t.schema)]);
    const committed = readWarehouseDoc();
    // Compared as text so a failure shows the lines that differ.
    expect(committed, `${path.relative(process.cwd(), WAREHOUSE_DOC)} is stale: ${REGENERATE}`).toBe(
      renderDocument(committed, schema),
    );
  });

  it('shows a diagram drawn from the Mermaid source of the current schema', async () => {
    const mermaid = renderMermaid(await introspect(t.pool, [t.schema, bookkeepingSchema(t.schema)]));
    expect(mermaid).toMatch(/^erDiagram\n/);
    expect(mermaid).toContain('sources ||--o{ feedback : "source_id"');
    expect(mermaid).toContain('visitors |o..o{ feedback : "visitor_id"');
    const svg = readFileSync(path.join(path.dirname(WAREHOUSE_DOC), DIAGRAM_FILE), 'utf8');
    expect(svg).toContain('<svg');
    expect(recordedHash(svg), `docs/${DIAGRAM_FILE} was drawn from another schema: ${REGENERATE}`).toBe(
      mermaidHash(mermaid),
    );
  });

  it('says what the spec leaves open, and the assumption behind the test statistics', async () => {
    const doc = readWarehouseDoc();
    const comment = (relation: string, column: string) =>
      live.find((c) => c.relation === relation && c.column === column)?.comment ?? '';
    for (const [relation, column] of [
      ['recordings', 'duration'],
      ['heatmaps', 'heatmap_limit'],
      ['heatmaps', 'rule'],
      ['test_results', 'complete'],
      ['test_results', 'total'],
      ['visitors', 'device'],
      ['feedback', 'rating'],
    ] as const)
      expect(comment(relation, column), `${relation}.${column}`).toContain('not documented by the service');
    const assumption = 'complete counts goal completions among total visitors';
    expect(doc).toContain(assumption);
    const viewComments = await sql<{ comment: string }>`
      select obj_description(format('%I.%I', ${t.schema}::text, v)::regclass, 'pg_class') as comment
        from unnest(array['ab_test_results', 'personalization_results']) v`.execute(t.db);
    for (const row of viewComments.rows) expect(row.comment).toContain(assumption);
  });
});
