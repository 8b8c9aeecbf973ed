/**
 * dbt's freshness with several sources: one source that stops syncing makes every relation it
 * feeds stale, however recently the others ran. The analyst evaluates each generated
 * loaded_at_query (or loaded_at_field) on a plain connection, as `dbt source freshness` would.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { DEFAULT_FRESHNESS, writeDbtSources } from '../../src/dbt/dbt-sources.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';

const NOW = new Date('2026-03-08T06:00:00.000Z');
/** How far back the stale source's last reads are moved: past dbt's error_after. */
const STALE_HOURS = DEFAULT_FRESHNESS.errorAfterHours + 10;

interface TableConfig {
  name: string;
  config: { freshness?: unknown; loaded_at_field?: string; loaded_at_query?: string; meta: object };
}

describe('dbt freshness with two sources, one stale', () => {
  let roles: RolesDatabase;
  let sim: Simulator;
  let analyst: pg.Client;
  let tables: TableConfig[];

  beforeAll(async () => {
    roles = await createRolesDatabase();
    sim = await startSimulator({ seed: 3, from: '2026-03-01', to: '2026-03-07' });
    const sources = [simulatorSource(sim, 'fresh'), simulatorSource(sim, 'stale')];
    expect((await runAgainst(roles.as('sync'), sim, { now: NOW, sources })).status).toBe('ok');
    // The stale source stopped syncing STALE_HOURS ago: every time a run wrote for it moves back.
    const owner = new pg.Client({ connectionString: roles.url.owner });
    await owner.connect();
    try {
      const shift = `- interval '${STALE_HOURS} hours'`;
      await owner.query(
        `update ${bookkeepingSchema(SCHEMA)}.sync_windows set fetched_at = fetched_at ${shift} where source_id = 'stale'`,
      );
      const { rows } = await owner.query<{ table: string; column: string }>(
        `select c.relname as table, a.attname as column from pg_attribute a
           join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = $1 and c.relkind = 'r' and a.attname in ('last_seen_at', 'captured_at')
            and exists (select 1 from pg_attribute s where s.attrelid = c.oid and s.attname = 'source_id')`,
        [SCHEMA],
      );
      for (const r of rows)
        await owner.query(
          `update ${SCHEMA}."${r.table}" set "${r.column}" = "${r.column}" ${shift} where source_id = 'stale'`,
        );
    } finally {
      await owner.end();
    }
    analyst = new pg.Client({ connectionString: roles.url.analyst });
    await analyst.connect();
    const file = parse(await writeDbtSources(analyst, SCHEMA), { version: '1.1' }) as {
      sources: { tables: TableConfig[] }[];
    };
    tables = file.sources[0]?.tables ?? [];
  }, 120_000);
  afterAll(async () => {
    await analyst?.end();
    await sim?.stop();
    await roles?.drop();
  });

  /** The hours between the relation's loaded-at and now, as dbt computes them. */
  const ageHours = async (t: TableConfig): Promise<number | null> => {
    const query =
      t.config.loaded_at_query ?? `select max(${t.config.loaded_at_field}) from ${SCHEMA}.${t.name}`;
    const { rows } = await analyst.query<{ hours: number | null }>(
      `select extract(epoch from now() - (${query}))::float8 / 3600 as hours`,
    );
    return rows[0]?.hours ?? null;
  };

  it('every relation with a freshness check is past error_after, although the other source just ran', async () => {
    const checked = tables.filter(
      (t) => t.config.loaded_at_query !== undefined || t.config.loaded_at_field !== undefined,
    );
    expect(checked.map((t) => t.name)).toEqual(
      expect.arrayContaining([
        'feedback',
        'survey_answers',
        'recordings',
        'ab_tests',
        'heatmaps',
        'test_results',
      ]),
    );
    const fresh: string[] = [];
    for (const t of checked) {
      const hours = await ageHours(t);
      if (hours === null || hours < DEFAULT_FRESHNESS.errorAfterHours) fresh.push(`${t.name}: ${hours}`);
    }
    expect(fresh).toEqual([]);
  });

  it('the fresh source alone is fresh: the queries take the oldest source, not any old row', async () => {
    const { rows } = await analyst.query<{ source_id: string; hours: number }>(
      `select source_id, extract(epoch from now() - min(last_read_at))::float8 / 3600 as hours
         from ${SCHEMA}.sync_health group by source_id order by source_id`,
    );
    expect(rows.map((r) => [r.source_id, r.hours < 1])).toEqual([
      ['fresh', true],
      ['stale', false],
    ]);
  });

  it('visitors has no freshness check: its last_changed_at stays put on a quiet site although the sync runs', () => {
    const visitors = tables.find((t) => t.name === 'visitors');
    expect(visitors?.config.freshness).toBeNull();
    expect(visitors?.config.loaded_at_field).toBeUndefined();
    expect(JSON.stringify(visitors?.config.meta)).toContain('last_changed_at');
  });
});
