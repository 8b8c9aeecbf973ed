import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { BENCHMARK_SIZE, BIG_TABLES, fillBenchmarkWarehouse, SMALL_SOURCE } from './benchmark-warehouse.js';
import { exampleQueries } from './warehouse-doc.js';

/**
 * On a warehouse of a busy site's year (a million feedback items, half a million survey answers,
 * 300,000 recordings, 200,000 visitors), no example query of docs/warehouse.md reads a big table
 * from end to end: an index serves it, and the indexes its `-- served by:` line names are in
 * its plan. The plans, one line per node, go to test-output/explain-plans.txt.
 */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode, depth = 0): { node: PlanNode; depth: number }[] {
  return [{ node: plan, depth }, ...(plan.Plans ?? []).flatMap((child) => nodes(child, depth + 1))];
}

function describeNode({ node, depth }: { node: PlanNode; depth: number }): string {
  const on = node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
  const using = node['Index Name'] ? ` using ${node['Index Name']}` : '';
  return `${'  '.repeat(depth)}${node['Node Type']}${using}${on}`;
}

const OUTPUT = path.resolve(import.meta.dirname, '../../test-output/explain-plans.txt');

describe(`example queries on ${BENCHMARK_SIZE.feedback.toLocaleString('en-US')} feedback rows`, () => {
  let t: TestDatabase;
  const report: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    const started = Date.now();
    await fillBenchmarkWarehouse(t.pool);
    report.push(`filled in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 90_000);
  afterAll(async () => {
    await mkdir(path.dirname(OUTPUT), { recursive: true });
    await writeFile(OUTPUT, `${report.join('\n')}\n`);
    await t?.drop();
  });

  const plan = async (query: string) => {
    const result = await sql<{
      'QUERY PLAN': [{ Plan: PlanNode }];
    }>`explain (format json) ${sql.raw(query)}`.execute(t.db);
    const root = result.rows[0]?.['QUERY PLAN'][0].Plan;
    if (!root) throw new Error('no plan');
    return nodes(root);
  };
  const sequential = (all: { node: PlanNode }[]) =>
    all
      .filter(
        ({ node }) => node['Node Type'] === 'Seq Scan' && BIG_TABLES.includes(node['Relation Name'] ?? ''),
      )
      .map(({ node }) => node['Relation Name']);

  it('is big: the tables hold what the benchmark says', async () => {
    const counts = await sql<{ feedback: number; survey: number; visitors: number }>`
      select (select count(*)::int from feedback) as feedback, (select count(*)::int from survey_answers) as survey,
             (select count(*)::int from visitors) as visitors`.execute(t.db);
    expect(counts.rows[0]).toEqual({
      feedback: BENCHMARK_SIZE.feedback,
      survey: BENCHMARK_SIZE.survey,
      visitors: BENCHMARK_SIZE.visitors,
    });
  });

  it('notices a sequential scan: a filter no index serves reads the whole table', async () => {
    expect(
      sequential(await plan(`select count(*) from feedback where comment = 'Love the new design!'`)),
    ).toEqual(['feedback']);
  });

  // The days of one source beside a bigger one: 1 row in 300 is the small source's.
  for (const table of ['feedback', 'survey_answers', 'recordings'])
    it(`one small source's last 7 days of ${table} are served by ${table}_source_dt_idx`, async () => {
      const query = `select * from ${table} where source_id = '${SMALL_SOURCE}' and dt >= now() - interval '7 days'`;
      const all = await plan(query);
      report.push('', `${table} of the small source, last 7 days`, ...all.map(describeNode));
      expect(all.map(({ node }) => node['Index Name']).filter((name) => name !== undefined)).toEqual([
        `${table}_source_dt_idx`,
      ]);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from (${sql.raw(query)}) x`.execute(
        t.db,
      );
      expect(rows[0]?.n).toBeGreaterThan(0);
    });

  for (const example of exampleQueries()) {
    it(`${example.number}. ${example.title}: no big table read sequentially${
      example.servedBy.length > 0 ? `, served by ${example.servedBy.join(', ')}` : ''
    }`, async () => {
      const all = await plan(example.sql);
      report.push('', `${example.number}. ${example.title}`, ...all.map(describeNode));
      expect(sequential(all)).toEqual([]);
      const used = new Set(all.map(({ node }) => node['Index Name']).filter((name) => name !== undefined));
      expect(example.servedBy.filter((index) => !used.has(index))).toEqual([]);
    });
  }
});
