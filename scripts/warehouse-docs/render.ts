import { createHash } from 'node:crypto';
import type { LiveSchema, Relation } from '../../src/db/catalog.js';

/**
 * Renders the generated parts of docs/warehouse.md from the live schema: the data dictionary (one
 * section per table and view, one row per column, the meaning taken from its COMMENT) and the
 * Mermaid ER diagram. Pure: the same schema always gives the same text, which is what
 * test/analyst/dictionary.test.ts compares with the committed document.
 */

/**
 * Joins the analyst makes that no foreign key declares (the API gives no guarantee the other row
 * exists). Shown in the dictionary and, dotted, in the diagram; rendering fails if one names a
 * column that does not exist, so the list cannot outlive the schema.
 */
export const LOGICAL_JOINS: readonly { from: string; columns: string[]; to: string; toColumns: string[] }[] =
  [
    {
      from: 'feedback',
      columns: ['source_id', 'visitor_id'],
      to: 'visitors',
      toColumns: ['source_id', 'id'],
    },
    {
      from: 'survey_answers',
      columns: ['source_id', 'visitor_id'],
      to: 'visitors',
      toColumns: ['source_id', 'id'],
    },
    {
      from: 'test_results',
      columns: ['source_id', 'test_id'],
      to: 'ab_tests',
      toColumns: ['source_id', 'id'],
    },
    {
      from: 'test_results',
      columns: ['source_id', 'test_id'],
      to: 'personalization_tests',
      toColumns: ['source_id', 'id'],
    },
    {
      from: 'test_result_history',
      columns: ['source_id', 'test_kind', 'test_id', 'variant'],
      to: 'test_results',
      toColumns: ['source_id', 'test_kind', 'test_id', 'variant'],
    },
    ...(
      [
        ['ab_test_versions', 'ab_tests'],
        ['personalization_test_versions', 'personalization_tests'],
        ['heatmap_versions', 'heatmaps'],
      ] as const
    ).map(([from, to]) => ({ from, columns: ['source_id', 'id'], to, toColumns: ['source_id', 'id'] })),
    {
      from: 'sync_windows',
      columns: ['source_id', 'resource'],
      to: 'watermarks',
      toColumns: ['source_id', 'resource'],
    },
  ];

export const MARKERS = {
  dictionary: [
    '<!-- BEGIN GENERATED: dictionary (npm run docs:warehouse) -->',
    '<!-- END GENERATED: dictionary -->',
  ],
  diagram: [
    '<!-- BEGIN GENERATED: er-diagram (npm run docs:warehouse) -->',
    '<!-- END GENERATED: er-diagram -->',
  ],
} as const;

/** The migrator's own tables: in the dictionary (BI tools list them), not in the picture. */
const isBookkeepingOfMigrator = (name: string) => name.startsWith('kysely_migration');

export function renderDictionary(schema: LiveSchema): string {
  checkJoins(schema);
  const dataSchema = schema.relations[0]?.schema;
  const sections = schema.relations.map((r) => renderRelation(r, dataSchema));
  return sections.join('\n');
}

function renderRelation(r: Relation, dataSchema: string | undefined): string {
  const where = r.schema === dataSchema ? '' : `, bookkeeping schema \`${r.schema}\``;
  const lines = [`### \`${r.name}\` (${r.kind}${where})`, '', cell(r.comment ?? '(no comment)'), ''];
  const facts: string[] = [];
  if (r.primaryKey.length > 0) facts.push(`Key: ${codeList(r.primaryKey)}.`);
  for (const u of r.unique) facts.push(`Unique: ${codeList(u.columns)}.`);
  for (const fk of r.foreignKeys)
    facts.push(`References: ${codeList(fk.columns)} → \`${fk.table}\` (${codeList(fk.references)}).`);
  for (const join of LOGICAL_JOINS.filter((j) => j.from === r.name))
    facts.push(
      `Joins (no foreign key): ${codeList(join.columns)} → \`${join.to}\` (${codeList(join.toColumns)}).`,
    );
  if (r.indexes.length > 0)
    facts.push(`Indexes: ${r.indexes.map((i) => `\`${i.name}\` ${i.definition}`).join('; ')}.`);
  if (facts.length > 0) lines.push(...facts.map((f) => `- ${f}`), '');
  if (r.kind === 'table') {
    lines.push('| column | type | not null | meaning |', '|---|---|---|---|');
    for (const c of r.columns)
      lines.push(`| \`${c.name}\` | ${c.type} | ${c.notNull ? 'yes' : ''} | ${cell(c.comment ?? '')} |`);
  } else {
    lines.push('| column | type | meaning |', '|---|---|---|');
    for (const c of r.columns) lines.push(`| \`${c.name}\` | ${c.type} | ${cell(c.comment ?? '')} |`);
  }
  lines.push('');
  return lines.join('\n');
}

/** Mermaid erDiagram of the tables: every column, keys, foreign keys (solid), logical joins (dotted). */
export function renderMermaid(schema: LiveSchema): string {
  checkJoins(schema);
  const tables = schema.relations.filter((r) => r.kind === 'table' && !isBookkeepingOfMigrator(r.name));
  const lines = ['erDiagram'];
  for (const t of tables) {
    for (const fk of t.foreignKeys) lines.push(`  ${fk.table} ||--o{ ${t.name} : "${fk.columns.join(', ')}"`);
  }
  for (const join of LOGICAL_JOINS) {
    const label = join.columns.filter((c) => c !== 'source_id').join(', ');
    lines.push(`  ${join.to} |o..o{ ${join.from} : "${label}"`);
  }
  for (const t of tables) {
    lines.push(`  ${t.name} {`);
    for (const c of t.columns) {
      const keys = [
        t.primaryKey.includes(c.name) ? 'PK' : undefined,
        t.foreignKeys.some((fk) => fk.columns.includes(c.name)) ? 'FK' : undefined,
      ].filter((k) => k !== undefined);
      lines.push(`    ${c.shortType} ${c.name}${keys.length > 0 ? ` ${keys.join(', ')}` : ''}`);
    }
    lines.push('  }');
  }
  return `${lines.join('\n')}\n`;
}

/** The diagram's file records the hash of the Mermaid text it was drawn from. */
export function mermaidHash(mermaid: string): string {
  return createHash('sha256').update(mermaid).digest('hex');
}

/** The source hash an SVG written by renderMermaidSvg (render-diagram.ts) records. */
export function recordedHash(svg: string): string | undefined {
  return /source-sha256: ([0-9a-f]{64})/.exec(svg)?.[1];
}

export const DIAGRAM_FILE = 'warehouse-er.svg';

export function renderDiagramSection(mermaid: string): string {
  return [
    `![The warehouse tables and how they join](${DIAGRAM_FILE})`,
    '',
    '<details><summary>Mermaid source of the diagram</summary>',
    '',
    '```mermaid',
    mermaid.trimEnd(),
    '```',
    '',
    '</details>',
  ].join('\n');
}

/** Replaces the text between a pair of markers; throws when the document lacks them. */
export function replaceBetween(
  document: string,
  [begin, end]: readonly [string, string],
  body: string,
): string {
  const start = document.indexOf(begin);
  const stop = document.indexOf(end);
  if (start < 0 || stop < start) throw new Error(`the document lacks the markers ${begin} ... ${end}`);
  return `${document.slice(0, start + begin.length)}\n${body.trimEnd()}\n${document.slice(stop)}`;
}

export function renderDocument(document: string, schema: LiveSchema): string {
  const withDictionary = replaceBetween(document, MARKERS.dictionary, renderDictionary(schema));
  return replaceBetween(withDictionary, MARKERS.diagram, renderDiagramSection(renderMermaid(schema)));
}

function checkJoins(schema: LiveSchema): void {
  for (const join of LOGICAL_JOINS) {
    for (const [table, columns] of [
      [join.from, join.columns],
      [join.to, join.toColumns],
    ] as const) {
      const relation = schema.relations.find((r) => r.name === table);
      const missing = columns.filter((c) => !relation?.columns.some((col) => col.name === c));
      if (missing.length > 0)
        throw new Error(`LOGICAL_JOINS names ${table}.${missing.join(', ')}, which the schema lacks`);
    }
  }
}

/** Markdown table cell text: pipes escaped, angle brackets as entities (else read as HTML tags). */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('\n', ' ');
}

function codeList(columns: readonly string[]): string {
  return columns.map((c) => `\`${c}\``).join(', ');
}
