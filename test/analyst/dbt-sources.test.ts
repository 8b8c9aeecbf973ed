import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import * as z from 'zod';
import { runDbtSources } from '../../src/cli/dbt-sources-run.js';
import { loadConfig } from '../../src/config/config.js';
import { DEFAULT_FRESHNESS, writeDbtSources } from '../../src/dbt/dbt-sources.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';

/**
 * dbt's published JSON schema of property files, current syntax (fixtures/README.md says where it
 * comes from): what dbt 1.10 and later, and dbt Fusion, accept. Unknown keys are refused.
 */
const DBT_SCHEMA = JSON.parse(
  readFileSync(path.join(import.meta.dirname, 'fixtures', 'dbt_yml_files-latest-fusion.json'), 'utf8'),
) as object;
// The schema's int64/uint64 formats are Rust's names, not JSON Schema formats: not validated.
const validateDbt = new Ajv({ strict: false, allErrors: true, validateFormats: false }).compile(DBT_SCHEMA);

/** What the tests below read of the file, once the schema has accepted it. */
const dataTest = z.union([
  z.string(),
  z.record(z.string(), z.record(z.string(), z.unknown())).refine((o) => Object.keys(o).length === 1),
]);
const rules = z.object({ count: z.number().int().positive(), period: z.enum(['minute', 'hour', 'day']) });
const tableConfig = z.object({
  meta: z.record(z.string(), z.unknown()),
  freshness: z.object({ warn_after: rules, error_after: rules }).nullable().optional(),
  loaded_at_field: z.string().optional(),
  loaded_at_query: z.string().optional(),
});
const sourcesFile = z.object({
  version: z.literal(2),
  sources: z.array(
    z.object({
      name: z.string().min(1),
      schema: z.string(),
      config: z.object({ freshness: z.object({ warn_after: rules, error_after: rules }) }),
      tables: z.array(
        z.object({
          name: z.string().min(1),
          description: z.string(),
          config: tableConfig,
          data_tests: z.array(dataTest).optional(),
          columns: z.array(
            z.object({
              name: z.string().min(1),
              description: z.string(),
              data_tests: z.array(dataTest).optional(),
            }),
          ),
        }),
      ),
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
  const given =
    typeof test === 'string' ? {} : ((test as Record<string, Record<string, unknown>>)[name] ?? {});
  // dbt 1.10: a test's arguments under `arguments:`, column_name beside them.
  const args = { ...given, ...((given.arguments as Record<string, unknown> | undefined) ?? {}) };
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

  it("is valid by dbt's published JSON schema of property files, which refuses the pre-1.10 keys", () => {
    expect(validateDbt(parse(text, { version: '1.1' })), JSON.stringify(validateDbt.errors)).toBe(true);
    // The schema tells the old syntax apart: loaded_at_field and meta beside config, not in it.
    const old = structuredClone(file) as { sources: { tables: Record<string, unknown>[] }[] };
    const first = old.sources[0]?.tables[0];
    if (first === undefined) throw new Error('no table');
    first.loaded_at_field = 'last_seen_at';
    expect(validateDbt(old)).toBe(false);
  });

  it("parses (YAML 1.1, as dbt's PyYAML reads it) into the shape these tests read", () => {
    expect(file.version).toBe(2);
    expect(file.sources).toHaveLength(1);
    const [source] = file.sources;
    expect(source).toMatchObject({
      name: t.schema,
      schema: t.schema,
      config: {
        freshness: {
          warn_after: { count: DEFAULT_FRESHNESS.warnAfterHours, period: 'hour' },
          error_after: { count: DEFAULT_FRESHNESS.errorAfterHours, period: 'hour' },
        },
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
      if (x.config.loaded_at_field !== undefined)
        expect(columns.map((c) => c.name)).toContain(x.config.loaded_at_field);
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
            arguments: { to: `source('${t.schema}', 'visitors')`, field: 'row(source_id, id)' },
          },
        },
      ]),
    );
    expect(feedback?.columns.find((c) => c.name === 'source_id')?.data_tests).toEqual([
      'not_null',
      { relationships: { arguments: { to: `source('${t.schema}', 'sources')`, field: 'source_id' } } },
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

  it('freshness is when the tool last read a resource, whatever changed, not when its content last changed', async () => {
    const tables = file.sources[0]?.tables ?? [];
    const config = (name: string) => tables.find((x) => x.name === name)?.config;
    // The last read of the relation's resources, the oldest over the sources (dbt-freshness.test.ts).
    expect(config('ab_tests')?.loaded_at_query).toContain("resource in ('abtesting')");
    expect(config('test_results')?.loaded_at_query).toContain("resource in ('abtesting', 'personalization')");
    expect(config('heatmaps')?.loaded_at_query).toContain("resource in ('heatmaps')");
    expect(config('sync_health')?.loaded_at_query).toContain(`from ${t.schema}.sync_health`);
    expect(config('day_completeness')?.loaded_at_query).toContain(
      "resource in ('feedback', 'survey', 'recordings')",
    );
    expect(config('feedback')?.loaded_at_field).toBeUndefined();
    const query = config('feedback')?.loaded_at_query ?? '';
    expect(query).toBe(
      `select min(coalesce(last_read_at, timestamptz 'epoch')) from ${t.schema}.sync_health where resource in ('feedback')`,
    );
    expect(config('survey_answers')?.loaded_at_query).toContain("resource in ('survey')");
    expect(config('recordings')?.loaded_at_query).toContain("resource in ('recordings')");
    // No column says when: no freshness check rather than a wrong one.
    expect(config('feedback_enriched')?.freshness).toBeNull();
    expect(config('feedback_enriched')?.loaded_at_field).toBeUndefined();

    // A second run that changes nothing: the read times move, the last change does not.
    const read = async () => {
      const { rows } = await sql<{ read: Date; changed: Date; seen: Date }>`
        select (${sql.raw(query)}) as read, (select max(last_changed_at) from feedback) as changed,
               (${sql.raw(config('ab_tests')?.loaded_at_query ?? '')}) as seen`.execute(t.db);
      const row = rows[0];
      if (row === undefined) throw new Error('no row');
      return row;
    };
    const before = await read();
    const run = await runAgainst(t, sim, { now: NOW });
    expect(run.status).toBe('ok');
    const after = await read();
    expect(after.read.getTime()).toBeGreaterThan(before.read.getTime());
    expect(after.seen.getTime()).toBeGreaterThan(before.seen.getTime());
    expect(after.changed).toEqual(before.changed);
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
