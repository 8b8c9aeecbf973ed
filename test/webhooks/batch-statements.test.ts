/**
 * What a batch of deliveries costs the database (src/webhooks/receive-batch.ts): the same
 * statement, with the same text, whatever the number of deliveries, and usually only that one
 * (receive_webhook_batch(), src/load/webhook-batch.ts). The rows travel as one parameter per
 * table, so PostgreSQL parses no statement that grows with the batch.
 */
import { sql } from 'kysely';
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { receiveDeliveries } from '../../src/webhooks/receive-batch.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackBody, surveyBody, visitor } from './webhook-helpers.js';

const MAIN = { name: 'main', baseUrl: 'http://api.example.test' };

/** One statement sent: its text, its parameter count and length, and its name when sent as a named statement. */
interface Sent {
  text: string;
  parameters: number;
  /** Characters of its text parameters, all together. */
  length: number;
  name?: string;
}

/** Where the statements sent go while statementsOf runs; a client once wrapped stays wrapped. */
let sink: Sent[] | undefined;
const wrapped = new WeakSet<pg.PoolClient>();

function recordStatements(client: pg.PoolClient): void {
  if (wrapped.has(client)) return;
  wrapped.add(client);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const [first, second] = args;
    // pg takes a text and values, or one config object ({ name, text, values }: a named statement).
    const config = (typeof first === 'string' ? { text: first, values: second } : first) as {
      text?: unknown;
      values?: unknown;
      name?: unknown;
    };
    if (typeof config.text === 'string')
      sink?.push({
        text: config.text,
        parameters: Array.isArray(config.values) ? config.values.length : 0,
        length: Array.isArray(config.values)
          ? config.values.reduce((sum: number, v: unknown) => sum + (typeof v === 'string' ? v.length : 0), 0)
          : 0,
        ...(typeof config.name === 'string' ? { name: config.name } : {}),
      });
    return query(...args);
  };
}

/** Every statement the pool's connections are sent while `run` runs: text and parameter count. */
async function statementsOf(pool: pg.Pool, run: () => Promise<unknown>): Promise<Sent[]> {
  const sent: Sent[] = [];
  pool.on('acquire', recordStatements);
  sink = sent;
  try {
    await run();
  } finally {
    sink = undefined;
    pool.off('acquire', recordStatements);
  }
  return sent;
}

/** `n` new deliveries, feedback and survey answers alternating, each naming a visitor of its own. */
function newDeliveries(from: number, n: number) {
  return Array.from({ length: n }, (_, i) => {
    const id = from + i;
    const body =
      id % 2 === 0
        ? feedbackBody({ id, visitor: visitor(`v-${id}`) })
        : surveyBody({ id, visitor: visitor(`v-${id}`) });
    return { source: MAIN, body };
  });
}

describe('the statements of a batch of deliveries', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());
  beforeEach(async () => {
    await sql`truncate webhook_events, feedback, survey_answers, visitors, sources cascade`.execute(t.db);
    // The source row exists: the statements counted are those of every later batch.
    await receiveDeliveries(t.pool, newDeliveries(1_000_000, 2));
  });

  it('are the same, text for text, for 2 deliveries and for 100, with one parameter per table written at most', async () => {
    const ensured = new Set(['main']);
    const small = await statementsOf(t.pool, () => receiveDeliveries(t.pool, newDeliveries(0, 2), ensured));
    const large = await statementsOf(t.pool, () =>
      receiveDeliveries(t.pool, newDeliveries(100, 100), ensured),
    );
    expect(large.map((s) => s.text)).toEqual(small.map((s) => s.text));
    // The rows of each table as one JSON array: deliveries, visitors, feedback, survey answers.
    expect(Math.max(...large.map((s) => s.parameters))).toBeLessThanOrEqual(4);
  });

  it('are ONE statement, its own transaction (no begin, no lock of its own, no commit), for 1, 50 or 200 new deliveries', async () => {
    const ensured = new Set(['main']);
    for (const [from, n] of [
      [0, 1],
      [10, 50],
      [100, 200],
    ] as const) {
      const sent = await statementsOf(t.pool, () =>
        receiveDeliveries(t.pool, newDeliveries(from, n), ensured),
      );
      expect(sent.map((s) => s.text.trim().split(/\s+/)[0])).toEqual(['select']);
    }
    // Committed when it answered: every delivery and its row are there for any other connection.
    const stored = await sql<{ events: number; items: number }>`
      select (select count(*)::int from webhook_events where status = 'applied' and source_id = 'main') as events,
             (select count(*)::int from feedback) + (select count(*)::int from survey_answers) as items`.execute(
      t.db,
    );
    expect(stored.rows[0]).toEqual({ events: 2 + 1 + 50 + 200, items: 2 + 1 + 50 + 200 });
  });

  it('are stored in a transaction of several statements when a valid delivery of the batch is a redelivery: the one statement stored nothing', async () => {
    const ensured = new Set(['main']);
    const stored = newDeliveries(500, 1);
    await receiveDeliveries(t.pool, stored, ensured);
    const batch = [...newDeliveries(501, 3), ...stored];
    let outcomes: Awaited<ReturnType<typeof receiveDeliveries>> = [];
    const sent = await statementsOf(t.pool, async () => {
      outcomes = await receiveDeliveries(t.pool, batch, ensured);
    });
    // The one statement (refused: a valid delivery was not new), then begin with the lock, the
    // deliveries, the merge of the new ones, commit.
    expect(sent.length).toBe(5);
    expect(outcomes.map((o) => [o.status, o.duplicate])).toEqual([
      ['applied', false],
      ['applied', false],
      ['applied', false],
      ['applied', true],
    ]);
    // The new ones merged, each with its row and visitor, the redelivery nothing more.
    expect(outcomes.slice(0, 3).map((o) => o.status === 'applied' && o.merge)).toEqual(
      Array(3).fill({ row: 'inserted', visitor: 'inserted' }),
    );
    expect(outcomes[3]).not.toHaveProperty('merge');
    const items = await sql<{ n: number; count: number }>`
      select (select count(*)::int from feedback where id between 500 and 503)
           + (select count(*)::int from survey_answers where id between 500 and 503) as n,
             -- Counted twice (first delivery, redelivery), not three times: the refused statement left nothing.
             (select delivery_count from webhook_events
               where source_id = 'main' and (body->>'id')::int = 500) as count`.execute(t.db);
    expect(items.rows[0]).toEqual({ n: 4, count: 2 });
  });

  it("send each body once: a row's raw, and its visitor's, is taken from the stored body", async () => {
    const ensured = new Set(['main']);
    // With a field no schema knows, nested: raw keeps it as the stored body does.
    const batch = newDeliveries(700, 20).map(({ source, body }) => ({
      source,
      body: { ...body, extra: { nested: [1, 'two', { three: null }] } },
    }));
    const sent = await statementsOf(t.pool, () => receiveDeliveries(t.pool, batch, ensured));
    expect(sent).toHaveLength(1);
    const bodies = batch.reduce((sum, { body }) => sum + JSON.stringify(body).length, 0);
    // Each body's columns travel beside it (2.5 times the bodies here); with the body sent again
    // as the row's raw and the visitor's, it was 4.1 times.
    expect(sent[0]?.length).toBeLessThan(3 * bodies);
    const { rows } = await sql<{ item: boolean; visitor: boolean }>`
      select coalesce(f.raw, a.raw) = e.body as item, v.raw = e.body -> 'visitor' as visitor
        from webhook_events e
        left join feedback f on f.source_id = e.source_id and f.id = (e.body ->> 'id')::bigint
        left join survey_answers a on a.source_id = e.source_id and a.id = (e.body ->> 'id')::bigint
        join visitors v on v.source_id = e.source_id and v.id = e.body -> 'visitor' ->> 'id'
       where e.source_id = 'main' and (e.body ->> 'id')::int between 700 and 719`.execute(t.db);
    expect(rows).toEqual(Array(20).fill({ item: true, visitor: true }));
  });

  it('send every statement with rows as a named statement, which each connection prepares once', async () => {
    const ensured = new Set(['main']);
    const sent = await statementsOf(t.pool, () => receiveDeliveries(t.pool, newDeliveries(0, 50), ensured));
    const withRows = sent.filter((s) => s.parameters > 0);
    expect(withRows).toHaveLength(1);
    for (const statement of withRows) expect(statement.name).toMatch(/^insights_\d+$/);
    // The same names for a batch of another size: one prepared statement each, not one per batch.
    const again = await statementsOf(t.pool, () => receiveDeliveries(t.pool, newDeliveries(100, 7), ensured));
    expect(again.filter((s) => s.parameters > 0).map((s) => s.name)).toEqual(withRows.map((s) => s.name));
  });
});
