/**
 * The example queries of docs/warehouse.md with several sources. The same source ('main', the
 * same simulator) is loaded into two warehouses: alone, and beside two other sources: 'other'
 * serves the same data as main (same ids, names and numbers: a row taken from the wrong one is
 * a duplicate), 'third' uses the same ids (tests, questions, visitors, items) for other data. Every example,
 * run by the analyst on a plain connection, must give main's rows the same in both: an example
 * that sums, averages, picks or orders across sources gives other numbers, other rows or
 * another order once the other sources are there. The README's count of examples is the doc's.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { createRolesDatabase, type RolesDatabase } from '../reliability/warehouse-roles.js';
import { exampleQueries } from './warehouse-doc.js';

const DAYS = 21;
/** Columns that say when the tool did something, which differs between the two warehouses. */
const RUN_TIMES = new Set([
  'first_seen_at',
  'last_read_at',
  'last_run_finished_at',
  'valid_from',
  'last_seen_at',
]);
/** Example 14 lists what needs attention in the loads: nothing, in these warehouses. */
const MAY_BE_EMPTY = new Set([14]);

type Row = Record<string, unknown>;

/**
 * Of today's open day, the largest answer that served it: which request that was (the day's own,
 * or a wider one of the run's checks and proofs) varies with the order in which the run's windows
 * finished, not with the source's data. On the days to 2026-12-08 one of the two runs was served
 * the day in an answer of 36 items where the other's largest held its 21, in 4 of 5 tries.
 */
const OPEN_DAY_REQUESTS = new Set(['most_served']);

/** Rows without the run times, as sorted JSON: the same rows in the same order compare equal. */
function comparable(rows: Row[]): string[] {
  return rows.map((row) =>
    JSON.stringify(
      Object.fromEntries(
        Object.entries(row).filter(
          ([key]) => !RUN_TIMES.has(key) && !(row.status === 'open' && OPEN_DAY_REQUESTS.has(key)),
        ),
      ),
    ),
  );
}

describe('the example queries keep each source to itself', () => {
  const sims: Simulator[] = [];
  let alone: RolesDatabase;
  let beside: RolesDatabase;
  const analysts: pg.Client[] = [];

  const fill = async (roles: RolesDatabase, names: readonly string[]) => {
    const to = todayUtc(new Date());
    const sources = names.map((name, i) => {
      const sim = sims[i];
      if (sim === undefined) throw new Error(`no simulator for ${name}`);
      return simulatorSource(sim, name);
    });
    const first = sims[0];
    if (first === undefined) throw new Error('no simulator');
    const run = await runAgainst(roles.as('sync'), first, {
      now: new Date(),
      sources,
      settings: { startDate: addDays(to, 1 - DAYS) },
    });
    expect(run.status).toBe('ok');
    // One row only a webhook has delivered, in each source, for the example that lists them.
    const owner = new pg.Client({ connectionString: roles.url.owner });
    await owner.connect();
    try {
      for (const name of names)
        await owner.query(
          `insert into insights.feedback (source_id, id, feedback_id, question, comment, visitor_id, raw, origin)
           values ($1, 1, 101, 'How would you rate this page?', 'from a webhook', 'v0001-b64265', '{}', 'webhook')`,
          [name],
        );
    } finally {
      await owner.end();
    }
    const analyst = new pg.Client({ connectionString: roles.url.analyst });
    await analyst.connect();
    await analyst.query('set search_path = insights');
    analysts.push(analyst);
    return analyst;
  };

  let one: pg.Client;
  let three: pg.Client;

  beforeAll(async () => {
    const to = todayUtc(new Date());
    const volume = { feedbackPerDay: 30, surveyPerDay: 24, recordingsPerDay: 16, busyDayFeedback: 150 };
    // Seed 1 is the site the examples name (its visitor v0001-b64265, its tests and pages).
    for (const seed of [1, 1, 2])
      sims.push(await startSimulator({ seed, from: addDays(to, 1 - DAYS), to, cap: 4000, volume }));
    [alone, beside] = await Promise.all([createRolesDatabase(), createRolesDatabase()]);
    one = await fill(alone, ['main']);
    three = await fill(beside, ['main', 'other', 'third']);
  }, 180_000);
  afterAll(async () => {
    for (const analyst of analysts) await analyst.end();
    for (const sim of sims) await sim.stop();
    await alone?.drop();
    await beside?.drop();
  });

  it("the README's count of example queries is the doc's", () => {
    const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
    const said = /(\d+)\s+example queries/.exec(readme)?.[1];
    expect(Number(said)).toBe(exampleQueries().length);
  });

  it('an example that averages ratings keeps to one question: each question has its own scale', () => {
    const mixing = exampleQueries()
      .filter((e) => /avg\((\w+\.)?rating\)|rating_sum|average_rating/.test(e.sql))
      .filter((e) => !/question = '/.test(e.sql))
      .map((e) => `${e.number}. ${e.title}`);
    expect(mixing).toEqual([]);
  });

  for (const example of exampleQueries())
    it(`${example.number}. ${example.title}: main's rows are the same beside two other sources`, async () => {
      const mine = (await one.query<Row>(example.sql)).rows;
      const all = (await three.query<Row>(example.sql)).rows;
      const hasSource = all.length > 0 && 'source_id' in (all[0] ?? {});
      const mainOnly = hasSource ? all.filter((r) => r.source_id === 'main') : all;
      if (!MAY_BE_EMPTY.has(example.number)) expect(mine.length, 'finds rows').toBeGreaterThan(0);
      expect(comparable(mainOnly)).toEqual(comparable(mine));
      // An example that lists every source shows the others too, each in its own rows.
      if (hasSource && mine.length > 0) {
        const sources = new Set(all.map((r) => r.source_id));
        expect(sources.has('main')).toBe(true);
      }
    });
});
