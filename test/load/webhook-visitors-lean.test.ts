/**
 * Migration 0048: merge_visitors() writes the text of an observation's raw only where it can
 * decide (timed observations tying on dt), and merge_webhook_rows() takes a visitor's raw given as
 * a JSON object as it is, parsing only one given as text. What they write is unchanged: the first
 * untimed observation of a visitor wins whatever the text of the others, the larger raw still
 * wins a tie on dt, and a raw stored from an object equals the one stored from its text.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as webhookVisitorsLean from '../../migrations/0048-webhook-visitors-lean.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { visitor } from '../webhooks/webhook-helpers.js';

const SOURCE = 'lean';

describe('the visitors of a webhook batch (migration 0048)', () => {
  let t: TestDatabase;
  let state: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    state = bookkeepingSchema(t.schema);
    await sql`insert into sources (source_id, base_url) values (${SOURCE}, 'http://api.example.test')`.execute(
      t.db,
    );
  });
  afterAll(() => t.drop());

  /** merge_visitors() of the observations, in the order given: the visitors it says it wrote. */
  async function mergeVisitors(observations: { visitor: object; observedAt: string | null }[]) {
    const visitors = observations.map((o) => JSON.stringify(o.visitor));
    const { rows } = await sql<{ id: string; inserted: boolean; changed: boolean }>`
      select m.id, m.inserted, m.changed
        from ${sql.id(state, 'merge_visitors')}(
          ${observations.map(() => SOURCE)}::text[], ${visitors}::jsonb[], ${visitors}::jsonb[],
          ${observations.map((o) => o.observedAt)}::timestamptz[]) as m`.execute(t.db);
    return rows;
  }

  async function stored(id: string) {
    const { rows } = await sql<{ device: string; raw: unknown }>`
      select device, raw from visitors where source_id = ${SOURCE} and id = ${id}`.execute(t.db);
    return rows[0];
  }

  it('keeps the first untimed observation of a visitor, whatever the text of the later ones', async () => {
    // 'zz' sorts after 'aa': the text of the second raw is the larger one.
    await mergeVisitors([
      { visitor: { ...visitor('v-untimed'), device: 'aa' }, observedAt: null },
      { visitor: { ...visitor('v-untimed'), device: 'zz' }, observedAt: null },
    ]);
    expect((await stored('v-untimed'))?.device).toBe('aa');
  });

  it('still lets the larger raw win between two timed observations of the same dt', async () => {
    const dt = '2026-03-03T09:00:00.000Z';
    await mergeVisitors([
      { visitor: { ...visitor('v-timed'), device: 'aa' }, observedAt: dt },
      { visitor: { ...visitor('v-timed'), device: 'zz' }, observedAt: dt },
    ]);
    expect((await stored('v-timed'))?.device).toBe('zz');
    await mergeVisitors([{ visitor: { ...visitor('v-timed'), device: 'mm' }, observedAt: dt }]);
    expect((await stored('v-timed'))?.device).toBe('zz');
  });

  it('stores the same raw for a visitor whose raw is given as a JSON object or as its text', async () => {
    // A visitor's row as the receiver sends it: its columns, and its raw (the body's visitor).
    const raw = (id: string) => ({ ...visitor(id), extra: { nested: [1, 'two', { three: null }] } });
    const asObject = { source_id: SOURCE, ...visitor('v-object'), raw: raw('v-object') };
    const asText = { source_id: SOURCE, ...visitor('v-text'), raw: JSON.stringify(raw('v-text')) };
    // Each named by a feedback row: a visitor no row names would be removed again as an orphan.
    const item = (id: number, visitorId: string) => ({
      source_id: SOURCE,
      id,
      feedback_id: 7,
      question: 'q',
      session: 's',
      comment: 'c',
      screenshot: '',
      visitor_id: visitorId,
      raw: { id, visitor: visitorId },
    });
    const written = await sql<{ written_table: string; id: string }>`
      select m.written_table, m.id from ${sql.id(state, 'merge_webhook_rows')}(
        ${JSON.stringify([asObject, asText])}::jsonb,
        ${JSON.stringify([item(1, 'v-object'), item(2, 'v-text')])}::jsonb, '[]'::jsonb) as m
       order by m.written_table, m.id`.execute(t.db);
    expect(written.rows).toEqual([
      { written_table: 'feedback', id: '1' },
      { written_table: 'feedback', id: '2' },
      { written_table: 'visitors', id: 'v-object' },
      { written_table: 'visitors', id: 'v-text' },
    ]);
    expect((await stored('v-object'))?.raw).toEqual(asObject.raw);
    expect((await stored('v-text'))?.raw).toEqual(JSON.parse(asText.raw));
  });

  it('goes down to the definitions 0047 left and up again', async () => {
    const definitions = async () =>
      (
        await sql<{ def: string }>`
          select pg_get_functiondef(p.oid) as def from pg_proc p
           where p.pronamespace = ${state}::regnamespace
             and p.proname in ('merge_visitors', 'merge_webhook_rows') order by p.proname`.execute(t.db)
      ).rows.map((r) => r.def);
    const lean = await definitions();
    expect(lean.join('\n')).toContain('case when g.observed_at is not null then g.raw::text end');
    await webhookVisitorsLean.down(t.db);
    const before = await definitions();
    expect(before.join('\n')).toContain('(g.raw::text collate "C") desc');
    expect(before.join('\n')).toContain("array_agg((e.r ->> 'raw')::jsonb order by e.n) as raws");
    await webhookVisitorsLean.up(t.db);
    expect(await definitions()).toEqual(lean);
  });
});
