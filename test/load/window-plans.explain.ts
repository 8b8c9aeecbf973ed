import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Feedback } from '../../src/schemas/feedback.js';
import type { SurveyAnswer } from '../../src/schemas/survey-answer.js';
import { storeWindow, type WindowToStore } from '../../src/sync/store-window.js';
import { addDays, type DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { interceptQueries } from '../helpers/query-spy.js';
import { visitor } from '../webhooks/webhook-helpers.js';

/**
 * A window's statements join its items (a temporary table, never analyzed) with the stored
 * table. With hash and merge joins off (the window merge's pinned settings, migration 0041) every
 * join is a nested loop, and a nested loop whose inner side is not a probe by key reads a whole
 * table for every outer row: a staging table without index, a stored table by Seq Scan, or by an
 * index that the source id alone leads to (every row of the source). One such plan made a
 * window's item upsert run for minutes in the load benchmark.
 *
 * A window is one call of store_window() (src/sync/store-window.ts): its statements run inside
 * the function, where EXPLAIN cannot reach. So the call runs, on its own connection, in a
 * transaction rolled back afterwards, with auto_explain logging the plan of every statement the
 * function runs (nested statements, JSON) to the client. On a warehouse of a busy site's 20 days
 * (200,000 feedback items, as many survey answers), the plans of a window of 20 and of 10,000
 * items, on tables never analyzed (a new warehouse, empty and full: autovacuum analyzes late) and
 * on analyzed ones: the item upsert and the visitors' upsert, which every window runs, never read
 * a stored table whole nor anything whole per row. Every plan goes to
 * test-output/window-plans.txt, with the faults of the other statements (the moved-items
 * bookkeeping) marked, not asserted.
 */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Parent Relationship'?: string;
  'Index Cond'?: string;
  Plans?: PlanNode[];
}

const STORED = 200_000;
const DAYS = 20;
const VISITORS = 50_000;
/** The stored tables a window reads: never from end to end. */
const STORED_TABLES = ['feedback', 'survey_answers', 'visitors'];
/** The indexes that find a stored row by its key (or a day's rows by dt): a probe, not a scan. */
const KEYED_INDEX = /_(pkey|dt_idx)$/;
const FIRST_DAY = '2025-03-01' as DayString;
/** The statements every window runs, whose plans are asserted. */
const ITEM_UPSERT = /\binsert into "?(feedback|survey_answers)"? \(/i;
const VISITOR_UPSERT = /\binsert into "?visitors"?\b/i;
const ASSERTED = new RegExp(`${ITEM_UPSERT.source}|${VISITOR_UPSERT.source}`, 'i');
/** What a foreign key's trigger runs for each row it checks (PostgreSQL's RI_FKey_check). */
const FOREIGN_KEY_CHECK = /^SELECT 1 FROM ONLY /;
/** The call of the window merge, the one statement a window sends. */
const WINDOW_CALL = /\bstore_window\(/;
/** auto_explain, for the statements the call runs: every one, nested ones included, as JSON. */
const AUTO_EXPLAIN = [
  "load 'auto_explain'",
  'set local auto_explain.log_min_duration = 0',
  'set local auto_explain.log_nested_statements = on',
  'set local auto_explain.log_format = json',
  'set local client_min_messages = log',
];

/**
 * The plan's lines, indented, and what in it reads a table whole too often: a Seq Scan of a
 * stored table (its whole size, every window), and a Seq Scan on the inner side of a Nested Loop
 * (read again for every outer row; a staging table of 10,000 rows read 10,000 times).
 */
function readPlan(root: PlanNode): { lines: string[]; faults: string[] } {
  const lines: string[] = [];
  const faults: string[] = [];
  /** `inner`: on the inner side of a Nested Loop, run again for every outer row. */
  const walk = (node: PlanNode, depth: number, inner: { materialized: boolean } | undefined) => {
    const on = node['Relation Name'] ? ` on ${node['Relation Name']}` : '';
    const using = node['Index Name'] ? ` using ${node['Index Name']}` : '';
    lines.push(`${'  '.repeat(depth)}${node['Node Type']}${using}${on}`);
    const stored = STORED_TABLES.includes(node['Relation Name'] ?? '');
    const what = `${node['Node Type']}${using}${on}`;
    if (node['Node Type'] === 'Seq Scan' && stored) faults.push(what);
    else if (inner && node['Node Type'] === 'Seq Scan') faults.push(`${what}, inner side of a Nested Loop`);
    else if (
      inner &&
      stored &&
      (inner.materialized || !KEYED_INDEX.test(node['Index Name'] ?? '') || boundsTheSourceAlone(node))
    )
      // Materialized: the whole index range kept and read again for every outer row. Another
      // index, or a keyed one probed by the source id alone: the source's every row, per outer row.
      faults.push(`${what}, inner side of a Nested Loop${inner.materialized ? ', materialized' : ''}`);
    for (const child of node.Plans ?? []) {
      const innerOfThis = node['Node Type'] === 'Nested Loop' && child['Parent Relationship'] === 'Inner';
      const next = inner ?? (innerOfThis ? { materialized: false } : undefined);
      walk(
        child,
        depth + 1,
        next && {
          materialized:
            next.materialized || node['Node Type'] === 'Materialize' || child['Node Type'] === 'Materialize',
        },
      );
    }
  };
  walk(root, 0, undefined);
  return { lines, faults };
}

/**
 * An index scan whose Index Cond bounds no column but source_id: on (source_id, dt) it reads every
 * row of the source. A table never analyzed and still small when a window plans made the item
 * upsert probe for its identical stored row that way, and windows loading side by side each read
 * the whole source for every item while the others filled it.
 */
function boundsTheSourceAlone(node: PlanNode): boolean {
  if (node['Node Type'] !== 'Index Scan' && node['Node Type'] !== 'Index Only Scan') return false;
  const bounded = [...(node['Index Cond'] ?? '').matchAll(/\((\w+) (?:=|<|<=|>|>=) /g)].map((m) => m[1]);
  return bounded.every((column) => column === 'source_id');
}

interface ExplainedStatement {
  text: string;
  lines: string[];
  faults: string[];
}

/** Rows of a busy site's 20 days, in day order, as day-by-day loads leave them. */
async function fill(pool: pg.Pool): Promise<void> {
  const visitorOf = (n: string) => `'v' || lpad(((${n}) % ${VISITORS})::text, 6, '0')`;
  const dt = `timestamptz '${FIRST_DAY} 00:00Z' + (g * ${DAYS} / ${STORED}) * interval '1 day'
              + ((g * 7919) % 86400) * interval '1 second'`;
  await pool.query(`insert into sources (source_id, base_url) values ('main', 'https://api.example.com')`);
  await pool.query(`
    insert into visitors (source_id, id, name, company, email, ip, user_agent, landing_page, ref_page,
                          created_at, device, browser, os, raw, observed_at)
    select 'main', ${visitorOf('g')}, 'Visitor ' || g, '', 'v' || g || '@mail.example', '203.0.113.7',
           'Mozilla/5.0', 'https://shop.example.com/', '', timestamptz '${FIRST_DAY}', 'desktop', 'Firefox',
           'Linux', jsonb_build_object('id', ${visitorOf('g')}), timestamptz '${FIRST_DAY}'
      from generate_series(0, ${VISITORS - 1}) g`);
  await pool.query(`
    insert into feedback (source_id, id, feedback_id, question, session, comment, rating, rating_text, dt, url,
                          screenshot, visitor_id, raw, origin)
    select 'main', g, 101, 'How would you rate this page?', 's-' || g, repeat('Great selection. ', 20), 4,
           'Like', ${dt}, 'https://shop.example.com/', 'https://cdn.example/' || g || '.png',
           ${visitorOf('g * 13')}, jsonb_build_object('id', g, 'comment', repeat('Great selection. ', 20)), 'api'
      from generate_series(0, ${STORED - 1}) g`);
  await pool.query(`
    insert into survey_answers (source_id, id, question_id, question, session, comment, dt, url, visitor_id, raw, origin)
    select 'main', g, 11, 'What brought you here?', 's-' || g, repeat('Price. ', 40), ${dt},
           'https://shop.example.com/', ${visitorOf('g * 17')},
           jsonb_build_object('id', g, 'comment', repeat('Price. ', 40)), 'api'
      from generate_series(0, ${STORED - 1}) g`);
}

const visitorId = (i: number) => `v${String((i * 13) % VISITORS).padStart(6, '0')}`;
const at = (day: DayString, i: number) =>
  `${day}T${String(Math.floor(i / 3600) % 24).padStart(2, '0')}:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.000Z`;

function feedbackItems(day: DayString, n: number, from: number): Feedback[] {
  return Array.from({ length: n }, (_, i) => ({
    id: from + i,
    feedback_id: 101,
    question: 'How would you rate this page?',
    session: `s-${from + i}`,
    comment: 'Great selection. '.repeat(20),
    rating: 4,
    rating_text: 'Like',
    dt: at(day, i),
    url: 'https://shop.example.com/',
    screenshot: `https://cdn.example/${from + i}.png`,
    visitor: visitor(visitorId(i)),
  }));
}

function surveyItems(day: DayString, n: number, from: number): SurveyAnswer[] {
  return Array.from({ length: n }, (_, i) => ({
    id: from + i,
    question_id: 11,
    question: 'What brought you here?',
    session: `s-${from + i}`,
    comment: 'Price. '.repeat(40),
    dt: at(day, i),
    url: 'https://shop.example.com/',
    visitor: visitor(visitorId(i)),
  }));
}

/** Thrown instead of a window's commit: the window leaves the tables as they were. */
class RolledBack extends Error {}

const OUTPUT = path.resolve(import.meta.dirname, '../../test-output/window-plans.txt');

describe(`a window's statements on ${STORED.toLocaleString('en-US')} stored rows`, () => {
  let t: TestDatabase;
  /** Set while a window loads: its statements are EXPLAINed before they run. */
  let explained: ExplainedStatement[] | undefined;
  const report: string[] = [];

  const show = (s: ExplainedStatement) =>
    `${s.text.replace(/\s+/g, ' ').trim().slice(0, 100)}\n${s.lines.join('\n')}${s.faults.map((f) => `\n!! ${f}`).join('')}`;

  beforeAll(async () => {
    t = await createTestDatabase();
    // The statistics are the test's to choose: no analyze behind its back.
    for (const table of [...STORED_TABLES, 'key_collisions'])
      await t.pool.query(`alter table ${table} set (autovacuum_enabled = off)`);
    interceptQueries(t.pool, (args, query, client) => {
      const first = args[0];
      const text = typeof first === 'string' ? first : (first as { text?: unknown } | undefined)?.text;
      if (explained === undefined || typeof text !== 'string' || !WINDOW_CALL.test(text))
        return query(...args);
      const into = explained;
      return (async () => {
        const logged: string[] = [];
        const onNotice = (notice: { message?: string }) => logged.push(notice.message ?? '');
        client.on('notice', onNotice);
        try {
          await query('begin');
          for (const setting of AUTO_EXPLAIN) await query(setting);
          await query(...args);
        } finally {
          client.off('notice', onNotice);
          // Every window is rolled back: each test starts from the tables (and statistics) it chose.
          await query('rollback');
        }
        for (const message of logged) {
          const json = message.indexOf('{');
          if (!message.includes('plan:') || json < 0) continue;
          const entry = JSON.parse(message.slice(json)) as { 'Query Text': string; Plan: PlanNode };
          // A foreign key's check, run by its trigger once per inserted row: a probe by key.
          if (FOREIGN_KEY_CHECK.test(entry['Query Text'])) continue;
          const plan = readPlan(entry.Plan);
          const statement = { text: entry['Query Text'], ...plan };
          into.push(statement);
          report.push(show(statement));
        }
        throw new RolledBack();
      })();
    });
  }, 180_000);
  afterAll(async () => {
    await mkdir(path.dirname(OUTPUT), { recursive: true });
    await writeFile(OUTPUT, `${report.join('\n\n')}\n`);
    await t?.drop();
  });

  let nextDay = DAYS + 5;
  let nextId = 10_000_000;
  /**
   * Loads a window of `n` new items of a new day as the sync does, rolled back, and returns the
   * plans of the statements it ran.
   */
  const loadWindow = async (resource: 'feedback' | 'survey', n: number): Promise<ExplainedStatement[]> => {
    const day = addDays(FIRST_DAY, nextDay++);
    const valid = resource === 'feedback' ? feedbackItems(day, n, nextId) : surveyItems(day, n, nextId);
    nextId += n;
    const statements: ExplainedStatement[] = [];
    explained = statements;
    try {
      await storeWindow(t.pool, {
        sourceId: 'main',
        baseUrl: 'https://api.example.com',
        resource,
        day,
        status: 'done',
        valid,
        rejected: [],
        requestedLimit: 10_000,
        servedCount: n,
        truncated: false,
        runId: null,
        startDay: FIRST_DAY,
        today: addDays(FIRST_DAY, 400),
      } as WindowToStore<typeof resource>);
      throw new Error('the window committed');
    } catch (error) {
      if (!(error instanceof RolledBack)) throw error;
    } finally {
      explained = undefined;
    }
    return statements;
  };

  const expectIndexReads = async (title: string, resource: 'feedback' | 'survey', n: number) => {
    report.push(`=== ${title}`);
    const statements = await loadWindow(resource, n);
    const faulty = statements.filter((s) => s.faults.length > 0 && ASSERTED.test(s.text));
    expect(faulty.map(show).join('\n\n'), 'a plan reads a table whole, or whole per row').toBe('');
    // The window's item upsert and its visitors' upsert were among the statements explained.
    expect(statements.filter((s) => ITEM_UPSERT.test(s.text)).length).toBeGreaterThan(0);
    expect(statements.filter((s) => VISITOR_UPSERT.test(s.text)).length).toBeGreaterThan(0);
  };

  const windows = (state: string) => {
    for (const resource of ['feedback', 'survey'] as const)
      for (const n of [20, 10_000]) {
        const title = `${state}: ${resource}, a window of ${n.toLocaleString('en-US')} items`;
        it(
          `${title} reads the stored rows through an index`,
          () => expectIndexReads(title, resource, n),
          60_000,
        );
      }
  };

  describe('a new warehouse: empty tables, never analyzed', () => {
    windows('empty, never analyzed');
  });
  describe(`${STORED.toLocaleString('en-US')} rows, never analyzed`, () => {
    beforeAll(() => fill(t.pool), 120_000);
    windows('full, never analyzed');
  });
  describe(`${STORED.toLocaleString('en-US')} rows, analyzed`, () => {
    beforeAll(() => t.pool.query('analyze'), 60_000);
    windows('full, analyzed');
  });
});
