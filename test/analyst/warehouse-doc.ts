import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Reads docs/warehouse.md the way a person does, independently of the generator in
 * scripts/warehouse-docs: its example queries, and its dictionary (a `### name (kind)` heading per
 * table or view, then a table with one row per column).
 */
export const WAREHOUSE_DOC = path.resolve(import.meta.dirname, '../../docs/warehouse.md');

export function readWarehouseDoc(): string {
  return readFileSync(WAREHOUSE_DOC, 'utf8');
}

export interface ExampleQuery {
  number: number;
  title: string;
  sql: string;
  /** Indexes its `-- served by:` line names; the plan on a big warehouse must use each. */
  servedBy: string[];
}

export function exampleQueries(doc = readWarehouseDoc()): ExampleQuery[] {
  const section = between(doc, '## Example queries', '\n## ');
  const queries: ExampleQuery[] = [];
  for (const part of section.split(/^### /m).slice(1)) {
    const heading = /^(\d+)\. (.+)$/m.exec(part);
    const block = /```sql\n([\s\S]*?)```/.exec(part);
    if (!heading || !block) throw new Error(`example without a number or an sql block: ${part.slice(0, 80)}`);
    const sql = block[1] ?? '';
    const served = /^-- served by: (.+)$/m.exec(sql)?.[1];
    queries.push({
      number: Number(heading[1]),
      title: heading[2] ?? '',
      sql,
      servedBy: served === undefined ? [] : served.split(',').map((s) => s.trim()),
    });
  }
  return queries;
}

export interface DocumentedColumn {
  relation: string;
  kind: string;
  column: string;
  type: string;
  meaning: string;
}

/** Every row of every dictionary table: `| \`column\` | type | ... | meaning |`. */
export function documentedColumns(doc = readWarehouseDoc()): DocumentedColumn[] {
  const section = between(doc, '## Data dictionary', '\n## ');
  const columns: DocumentedColumn[] = [];
  for (const part of section.split(/^### /m).slice(1)) {
    const heading = /^`(\w+)` \((table|view)(?:, bookkeeping schema `\w+`)?\)$/m.exec(part);
    if (!heading)
      throw new Error(`dictionary section without a \`name\` (kind) heading: ${part.slice(0, 80)}`);
    for (const line of part.split('\n')) {
      const row = /^\| `(\w+)` \| ([^|]+) \|(.*)\|$/.exec(line);
      if (!row) continue;
      const cells = splitCells(row[3] ?? '');
      columns.push({
        relation: heading[1] ?? '',
        kind: heading[2] ?? '',
        column: row[1] ?? '',
        type: (row[2] ?? '').trim(),
        meaning: unescapeCell(cells.at(-1) ?? ''),
      });
    }
  }
  return columns;
}

function between(doc: string, start: string, end: string): string {
  const from = doc.indexOf(start);
  if (from < 0) throw new Error(`docs/warehouse.md has no "${start}" section`);
  const to = doc.indexOf(end, from + start.length);
  return doc.slice(from + start.length, to < 0 ? undefined : to);
}

/** Cells split on pipes that are not escaped (`\|` is a pipe inside a cell). */
function splitCells(text: string): string[] {
  return text.split(/(?<!\\)\|/).map((c) => c.trim());
}

function unescapeCell(text: string): string {
  return text.replaceAll('\\|', '|').replaceAll('&lt;', '<').replaceAll('&gt;', '>');
}
