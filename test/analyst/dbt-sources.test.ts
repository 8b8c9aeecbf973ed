import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { runDbtSources } from '../../src/cli/dbt-sources.js';
import { loadConfig } from '../../src/config/config.js';
import { DEFAULT_FRESHNESS, writeDbtSources } from '../../src/dbt/dbt-sources.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

/**
 * dbt's source properties (https://docs.getdbt.com/reference/source-properties), as strict
 * objects: a key dbt does not document there fails the parse.
 */
const dataTest = z.union([
  z.string(),
  z.record(z.string(), z.record(z.string(), z.unknown())).refine((o) => Object.keys(o).length === 1),
]);
const freshness = z
  .strictObject({
    warn_after: z.strictObject({
      count: z.number().int().positive(),
      period: z.enum(['minute', 'hour', 'day']),
    }),
    error_after: z.strictObject({
      count: z.number().int().positive(),
      period: z.enum(['minute', 'hour', 'day']),
    }),
    filter: z.string().optional(),
  })
  .nullable();
const column = z.strictObject({
  name: z.string().min(1),
  description: z.string(),
  meta: z.record(z.string(), z.unknown()).optional(),
  quote: z.boolean().optional(),
  data_tests: z.array(dataTest).optional(),
  tests: z.array(dataTest).optional(),
  tags: z.array(z.string()).optional(),
  data_type: z.string().optional(),
});
const table = z.strictObject({
  name: z.string().min(1),
  description: z.string(),
  meta: z.record(z.string(), z.unknown()).optional(),
  identifier: z.string().optional(),
  loaded_at_field: z.string().optional(),
  data_tests: z.array(dataTest).optional(),
  tests: z.array(dataTest).optional(),
  tags: z.array(z.string()).optional(),
  freshness: freshness.optional(),
  quoting: z.record(z.string(), z.boolean()).optional(),
  columns: z.array(column),
});
const sourcesFile = z.strictObject({
  version: z.literal(2),
  sources: z.array(
    z.strictObject({
      name: z.string().min(1),
      description: z.string().optional(),
      database: z.string().optional(),
      schema: z.string().optional(),
      loader: z.string().optional(),
      meta: z.record(z.string(), z.unknown()).optional(),
      tags: z.array(z.string()).optional(),
      freshness: freshness.optional(),
      loaded_at_field: z.string().optional(),
      tables: z.array(table),
    }),
  ),
});
type SourcesFile = z.infer<typeof sourcesFile>;
type DataTest = z.infer<typeof dataTest>;

/**
 * The SQL dbt compiles each generic test to (dbt-adapters, macros/generic_test_sql): a test passes
 * when its query returns no row.
 */
function compiledTest(test: DataTest, model: string, column: string | undefined, schema: string): string {
  const name = typeof test === 'string' ? test : (Object.keys(test)[0] ?? '');
  const args =
    typeof test === 'string' ? {} : ((test as Record<string, Record<string, unknown>>)[name] ?? {});
  const columnName = (args.column_name as string | undefined) ?? column ?? '';
  const relation = `${schema}.${model}`;
  switch (name) {
    case 'not_null':
      return `select ${columnName} from ${relation} where ${columnName} is null`;
    case 'unique':
      return `select ${columnName} as unique_field, count(*) as n_records from ${relation}
              where ${columnName} is not null group by ${columnName} having count(*) > 1`;
    case 'relationships': {
      const to = /^source\('(\w+)', '(\w+)'\)$/.exec(String(args.to));
      if (!to) throw new Error(`relationships to ${String(args.to)}: not a source() of this file`);
      return `with child as (select ${columnName} as from_field from ${relation} where ${columnName} is not null),
              parent as (select ${String(args.field)} as to_field from ${to[1]}.${to[2]})
              select from_field from child left join parent on child.from_field = parent.to_field
              where parent.to_field is null`;
    }
    default:
      throw new Error(`unexpected test ${name}`);
  }
}

function everyTest(file: SourcesFile, schema: string) {
  const tests: { where: string; sql: string }[] = [];
  for (const t of file.sources[0]?.tables ?? []) {
    for (const test of t.data_tests ?? [])
      tests.push({
        where: `${t.name} ${JSON.stringify(test)}`,
        sql: compiledTest(test, t.name, undefined, schema),
      });
    for (const c of t.columns)
      for (const test of c.data_tests ?? [])
        tests.push({
          where: `${t.name}.${c.name} ${JSON.stringify(test)}`,
          sql: compiledTest(test, t.name, c.name, schema),
        });
  }
  return tests;
}

const NOW = new Date('2026-03-08T06:00:00.000Z');

describe('dbt sources.yml from the live schema', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let file: SourcesFile;
  let text: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 3, from: '2026-03-01', to: '2026-03-07' });
    const run = await runAgainst(t, sim, { now: NOW });
    expect(run.status).toBe('ok');
    text = await writeDbtSources(t.pool, t.schema);
    file = sourcesFile.parse(parse(text, { version: '1.1' }));
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it("parses (YAML 1.1, as dbt's PyYAML reads it) into dbt's documented source-properties shape", () => {
    expect(file.version).toBe(2);
    expect(file.sources).toHaveLength(1);
    const [source] = file.sources;
    expect(source).toMatchObject({
      name: t.schema,
      schema: t.schema,
      freshness: {
        warn_after: { count: DEFAULT_FRESHNESS.warnAfterHours, period: 'hour' },
        error_after: { count: DEFAULT_FRESHNESS.errorAfterHours, period: 'hour' },
      },
    });
    // The same document under YAML 1.2.
    expect(parse(text)).toEqual(parse(text, { version: '1.1' }));
  });

  it('lists every data table and view, none of the bookkeeping, with the comments as descriptions', async () => {
    const live = await sql<{ name: string; comment: string | null }>`
      select c.relname as name, obj_description(c.oid, 'pg_class') as comment
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = ${t.schema} and c.relkind in ('r', 'p', 'v', 'm')`.execute(t.db);
    const tables = file.sources[0]?.tables ?? [];
    const expected = live.rows;
    expect(tables.map((x) => x.name).sort()).toEqual(expected.map((r) => r.name).sort());
    for (const x of tables) expect(x.description).toBe(expected.find((r) => r.name === x.name)?.comment);
    for (const name of [
      'feedback',
      'visitors',
      'ab_tests',
      'ab_test_results',
      'daily_activity',
      'sync_health',
    ])
      expect(tables.map((x) => x.name)).toContain(name);
    for (const name of ['sync_windows', 'watermarks', 'rejects', 'webhook_events', 'kysely_migration'])
      expect(tables.map((x) => x.name)).not.toContain(name);
  });

  it('every column it names exists, in order, with its comment as description, and each one has one', async () => {
    const live = await sql<{ relation: string; name: string; comment: string | null }>`
      select c.relname as relation, a.attname as name, col_description(c.oid, a.attnum) as comment
        from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = ${t.schema} and a.attnum > 0 and not a.attisdropped
       order by c.relname, a.attnum`.execute(t.db);
    for (const x of file.sources[0]?.tables ?? []) {
      const columns = live.rows.filter((r) => r.relation === x.name);
      expect(x.columns.map((c) => c.name)).toEqual(columns.map((c) => c.name));
      for (const c of x.columns) {
        expect(c.description, `${x.name}.${c.name}`).toBe(columns.find((r) => r.name === c.name)?.comment);
        expect(c.description.length, `${x.name}.${c.name}`).toBeGreaterThan(0);
      }
      if (x.loaded_at_field !== undefined) expect(columns.map((c) => c.name)).toContain(x.loaded_at_field);
    }
  });

  it('tests the natural keys, the sources and the visitor key, and every test passes on a synced warehouse', async () => {
    const tables = file.sources[0]?.tables ?? [];
    const feedback = tables.find((x) => x.name === 'feedback');
    expect(feedback?.data_tests).toEqual(
      expect.arrayContaining([
        { unique: { column_name: 'row(source_id, id, feedback_id)' } },
        {
          relationships: {
            column_name: 'row(source_id, visitor_id)',
            to: `source('${t.schema}', 'visitors')`,
            field: 'row(source_id, id)',
          },
        },
      ]),
    );
    expect(feedback?.columns.find((c) => c.name === 'source_id')?.data_tests).toEqual([
      'not_null',
      { relationships: { to: `source('${t.schema}', 'sources')`, field: 'source_id' } },
    ]);
    expect(tables.find((x) => x.name === 'sources')?.columns[0]?.data_tests).toEqual(['not_null', 'unique']);

    const tests = everyTest(file, t.schema);
    expect(tests.length).toBeGreaterThan(40);
    for (const test of tests) {
      const failures = await sql.raw(test.sql).execute(t.db);
      expect(failures.rows, test.where).toEqual([]);
    }
  });

  it('the visitor relationship finds a feedback row whose visitor is missing', async () => {
    const relationship = everyTest(file, t.schema).find(
      (x) => x.where.startsWith('feedback {"relationships"') && x.sql.includes('visitor_id'),
    );
    expect(relationship).toBeDefined();
    await t.db
      .transaction()
      .execute(async (trx) => {
        await sql`insert into feedback (source_id, id, feedback_id, visitor_id, raw)
                values ('main', -1, -1, 'nobody-knows-me', '{}')`.execute(trx);
        const failures = await sql.raw(relationship?.sql ?? '').execute(trx);
        expect(failures.rows).toEqual([{ from_field: '(main,nobody-knows-me)' }]);
        // Undoes the insert: the other tests see the synced warehouse only.
        throw new RolledBack();
      })
      .catch((error: unknown) => {
        if (!(error instanceof RolledBack)) throw error;
      });
  });

  it('loaded_at_field is a column the tool writes on every run where one exists, else the last change', async () => {
    const tables = file.sources[0]?.tables ?? [];
    const field = (name: string) => tables.find((x) => x.name === name)?.loaded_at_field;
    expect(field('ab_tests')).toBe('last_seen_at');
    expect(field('test_results')).toBe('last_seen_at');
    expect(field('heatmaps')).toBe('last_seen_at');
    expect(field('feedback')).toBe('last_changed_at');
    expect(field('sync_health')).toBe('last_loaded_at');
    expect(tables.find((x) => x.name === 'feedback')?.meta?.loaded_at_field_meaning).toMatch(
      /changed nothing/,
    );
    // No column says when: no freshness check rather than a wrong one.
    const enriched = tables.find((x) => x.name === 'feedback_enriched');
    expect(enriched?.freshness).toBeNull();
    expect(enriched?.loaded_at_field).toBeUndefined();

    // A second run that changes nothing: last_seen_at moves, last_changed_at does not.
    const before = await sql<{ seen: Date; changed: Date; feedback: Date }>`
      select (select max(last_seen_at) from ab_tests) as seen, (select max(last_changed_at) from ab_tests) as changed,
             (select max(last_changed_at) from feedback) as feedback`.execute(t.db);
    const run = await runAgainst(t, sim, { now: NOW });
    expect(run.status).toBe('ok');
    const after = await sql<{ seen: Date; changed: Date; feedback: Date }>`
      select (select max(last_seen_at) from ab_tests) as seen, (select max(last_changed_at) from ab_tests) as changed,
             (select max(last_changed_at) from feedback) as feedback`.execute(t.db);
    expect(after.rows[0]?.seen.getTime()).toBeGreaterThan(before.rows[0]?.seen.getTime() ?? Infinity);
    expect(after.rows[0]?.changed).toEqual(before.rows[0]?.changed);
    expect(after.rows[0]?.feedback).toEqual(before.rows[0]?.feedback);
  });

  it('runDbtSources writes the same document to --out, creating its directory', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'dbt-sources-'));
    try {
      const out = path.join(dir, 'models', 'sources.yml');
      const config = loadConfig({
        env: { DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema, LOG_LEVEL: 'silent' },
        requireSources: false,
      });
      const written: string[] = [];
      const write = process.stdout.write;
      process.stdout.write = ((chunk: string) => {
        written.push(String(chunk));
        return true;
      }) as typeof process.stdout.write;
      try {
        await runDbtSources({ out }, { config, logger: silentLogger() });
      } finally {
        process.stdout.write = write;
      }
      expect(await readFile(out, 'utf8')).toBe(await writeDbtSources(t.pool, t.schema));
      expect(written.join('')).toMatch(/^wrote .*sources\.yml: source \w+, \d+ tables and views\n$/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

class RolledBack extends Error {}
