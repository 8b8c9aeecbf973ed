import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import { inTransaction } from '../../src/db/transaction.js';
import { loadWindowItems } from '../../src/load/windowed.js';
import { forget } from '../../src/privacy/forget-visitor.js';
import { hmac, protectPersonalData } from '../../src/privacy/pii.js';
import { suppressedVisitors } from '../../src/privacy/suppression.js';
import type { PiiPolicy } from '../../src/schemas/pii.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { feedbackWebhookBody } from '../../src/simulator/webhook-sender.js';
import { receiveDelivery } from '../../src/webhooks/receive.js';
import { replayDeliveries } from '../../src/webhooks/replay.js';
import { createWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { everyTextOf } from '../reliability/warehouse-text.js';
import { capturingLogger, listen } from '../webhooks/webhook-helpers.js';

const FROM = '2026-03-01';
const TO = '2026-03-06';
const NOW = new Date('2026-03-07T05:00:00.000Z');
// Base64 of 33 bytes, as the key rule asks; its first 12 characters name the test.
const PII_KEY = 'forgetSticksHvTVY5XhoGeSAq8ic28zmDg4k1xIbKDU';
const TOKEN = 'forget-sticks-token-0123456789abcdef';

const POLICIES: Record<string, PiiPolicy> = {
  kept: { mode: 'keep' },
  hashed: { mode: 'hash', key: PII_KEY },
};

/**
 * Several tests start the CLI a few times: each start with a pii key loads the key's strength
 * estimator (about 1 s of CPU), which on a busy machine took them past the default 30 s.
 */
const CLI_TEST_MS = 90_000;

describe('forget sticks: a forgotten visitor is never stored again, by the sync or the webhook receiver', {
  timeout: CLI_TEST_MS,
}, () => {
  let t: TestDatabase;
  let sim: Simulator;
  let sources: SourceConfig[];
  let receiver: WebhookServer;
  let base: string;
  /** The clear id of the visitor with the most items, and how many items they have. */
  let visitorId: string;
  let items: number;
  const cli = (args: string[]) => runCli(args, cliEnv({ DATABASE_URL: t.url, INSIGHTS_PII_KEY: PII_KEY }));
  const stored = (source: string) => (source === 'hashed' ? hmac(PII_KEY, visitorId) : visitorId);
  const sync = async (range?: { from: string; to: string }) => {
    const result = await runAgainst(t, sim, {
      now: NOW,
      sources,
      ...(range === undefined ? {} : { request: { trigger: 'backfill', range } }),
    });
    expect(result.status, result.error ?? '').toBe('ok');
    return result;
  };
  const replayWebhooks = async () => {
    for (const source of Object.keys(POLICIES)) {
      const sent = await sim.sendWebhooks(`${base}/webhooks/${source}/${TOKEN}`);
      expect(sent.sent).toBeGreaterThan(20);
      expect(sent.statuses.every((status) => status === 200)).toBe(true);
    }
  };

  /** Rows of the visitor, in every table that can hold one. */
  const rowsOf = async (source: string) => {
    const id = stored(source);
    const result = await sql<{ n: number }>`
      select (select count(*) from visitors where source_id = ${source} and id = ${id})
           + (select count(*) from feedback where source_id = ${source} and visitor_id = ${id})
           + (select count(*) from survey_answers where source_id = ${source} and visitor_id = ${id})
           + (select count(*) from webhook_events where source_id = ${source}
                and (body->'visitor'->>'id' = ${id} or body_text like '%' || ${id} || '%'))
           + (select count(*) from rejects where source_id = ${source} and item::text like '%' || ${id} || '%')
           + (select count(*) from key_collisions where source_id = ${source} and raw->'visitor'->>'id' = ${id})
           as n`.execute(t.db);
    return Number(result.rows[0]?.n ?? -1);
  };

  /** Every text of the warehouse but the suppression list (which holds the kept source's clear id). */
  const warehouseText = async () =>
    (await everyTextOf(t))
      .split(/^-- /m)
      .filter((part) => !part.startsWith('suppressed_visitors\n'))
      .join('');

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 12, from: FROM, to: TO, cap: 4000 });
    sources = Object.entries(POLICIES).map(([name, pii]) => ({
      name,
      baseUrl: sim.url,
      apiKey: sim.apiKey,
      webhookToken: TOKEN,
      pii,
    }));
    receiver = createWebhookServer({
      pool: t.pool,
      logger: capturingLogger().logger,
      sources,
      bodyLimit: 64 * 1024,
    });
    base = await listen(receiver);
    const truth = sim.truth();
    const counts = new Map<string, number>();
    for (const item of [...truth.feedback, ...truth.survey])
      counts.set(item.visitor.id, (counts.get(item.visitor.id) ?? 0) + 1);
    // The busiest visitor who gave feedback as well as survey answers.
    const givers = new Set(truth.feedback.map((f) => f.visitor.id));
    const [top] = [...counts.entries()]
      .filter(([id]) => givers.has(id))
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    [visitorId, items] = top ?? ['', 0];
    expect(items).toBeGreaterThan(1);
  });
  afterAll(async () => {
    await receiver?.close();
    await sim?.stop();
    await t?.drop();
  });

  it('forget deletes every row of the visitor and lists them by the id each source stores', async () => {
    await sync();
    await replayWebhooks();
    // Feedback and survey rows, the visitor row and one delivery per item.
    for (const source of Object.keys(POLICIES)) expect(await rowsOf(source)).toBe(2 * items + 1);

    const result = await cli(['forget', '--visitor', visitorId]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`deleted ${2 * (2 * items + 1)} rows of the visitor`);
    expect(result.stdout).toContain('on the suppression list of hashed (pseudonym), kept');
    expect(`${result.stdout}${result.stderr}`).not.toContain(visitorId);
    expect(`${result.stdout}${result.stderr}`).not.toContain(hmac(PII_KEY, visitorId));
    for (const source of Object.keys(POLICIES)) expect(await rowsOf(source)).toBe(0);

    const list = await t.db
      .selectFrom('suppressed_visitors')
      .select(['source_id', 'visitor_id', 'hashed'])
      .orderBy('source_id')
      .execute();
    // Under hash the pseudonym, never the clear id.
    expect(list).toEqual([
      { source_id: 'hashed', visitor_id: hmac(PII_KEY, visitorId), hashed: true },
      { source_id: 'kept', visitor_id: visitorId, hashed: false },
    ]);
  });

  it('a backfill, a sync after late data and a webhook replay store nothing of the visitor', async () => {
    await sync({ from: FROM, to: TO });
    sim.advance();
    await sync();
    await replayWebhooks();
    for (const source of Object.keys(POLICIES)) expect(await rowsOf(source)).toBe(0);
    // Not a trace in any table: neither the id nor the pseudonym (but in the suppression list).
    const text = await warehouseText();
    expect(text).not.toContain(visitorId);
    expect(text).not.toContain(hmac(PII_KEY, visitorId));
    expect(await everyTextOf(t, { source: 'hashed' })).not.toContain(visitorId);

    // Everyone else is there: each source holds every other item of the service.
    const truth = sim.truth();
    const others = truth.feedback.filter((f) => f.visitor.id !== visitorId).length;
    for (const source of Object.keys(POLICIES)) {
      const row = await t.db
        .selectFrom('feedback')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('source_id', '=', source)
        .executeTakeFirstOrThrow();
      expect(Number(row.n), source).toBe(others);
    }
  });

  it('a delivery of the visitor is acknowledged (200 `suppressed`, no event id), valid or not, and not stored', async () => {
    const item = sim.truth().feedback.find((f) => f.visitor.id === visitorId);
    if (item === undefined) throw new Error('the visitor has no feedback');
    const before = await sql<{ n: number }>`select count(*)::int as n from webhook_events`.execute(t.db);
    for (const source of Object.keys(POLICIES)) {
      for (const body of [
        { ...feedbackWebhookBody(item), comment: 'a new comment' },
        // Invalid (id is not a number): a 422 for anyone else, but it names the visitor.
        { type: 'feedback', id: 'x', visitor: { id: visitorId, email: 'someone@mail.example' } },
      ]) {
        const response = await fetch(`${base}/webhooks/${source}/${TOKEN}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(response.status).toBe(200);
        expect(await response.json()).toEqual({ status: 'suppressed', event_id: null, duplicate: false });
      }
      // The path without batching answers alike.
      const single = await receiveDelivery(
        t.pool,
        { name: source, baseUrl: sim.url, pii: POLICIES[source] as PiiPolicy },
        feedbackWebhookBody(item),
      );
      expect(single).toEqual({ status: 'suppressed', eventId: null, duplicate: false });
    }
    const after = await sql<{ n: number }>`select count(*)::int as n from webhook_events`.execute(t.db);
    expect(after.rows[0]?.n).toBe(before.rows[0]?.n);
    for (const source of Object.keys(POLICIES)) expect(await rowsOf(source)).toBe(0);
  });

  it('a window load drops the visitor before anything is written and counts the items as suppressed', async () => {
    const truth = sim.truth();
    const theirs = truth.feedback.filter((f) => f.visitor.id === visitorId);
    const someone = truth.feedback.find((f) => f.visitor.id !== visitorId);
    if (someone === undefined) throw new Error('no other visitor');
    for (const source of Object.keys(POLICIES)) {
      const batch = protectPersonalData([...theirs, someone], POLICIES[source]);
      const load = await inTransaction(t.pool, (trx) => loadWindowItems(trx, 'feedback', source, batch));
      expect(load.suppressed).toBe(theirs.length);
      expect(load.inserted + load.updated + load.unchanged).toBe(1);
      expect(load.visitors.inserted + load.visitors.updated + load.visitors.unchanged).toBe(1);
      expect(await rowsOf(source)).toBe(0);
    }
  });

  it('an id PostgreSQL cannot hold (U+0000) is looked up without an error', async () => {
    const item = sim.truth().feedback[0];
    if (item === undefined) throw new Error('no feedback');
    const odd = { ...item.visitor, id: 'v\u0000odd' };
    // The webhook: rejected as unstorable (422), not a 500.
    const response = await fetch(`${base}/webhooks/kept/${TOKEN}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...feedbackWebhookBody(item), id: 987_654, visitor: odd }),
    });
    expect(response.status).toBe(422);
    // The sync's loader asks the same: no entry can hold such an id.
    const found = await inTransaction(t.pool, (trx) => suppressedVisitors(trx, 'kept', [odd.id, visitorId]));
    expect([...found]).toEqual([visitorId]);
  });

  it('webhooks replay deletes a stored delivery of a listed visitor instead of applying it', async () => {
    const item = sim.truth().feedback.find((f) => f.visitor.id === visitorId);
    if (item === undefined) throw new Error('the visitor has no feedback');
    // As if stored before the forget (forget itself deletes these).
    const body = protectPersonalData(feedbackWebhookBody(item), POLICIES.hashed);
    const { id } = await t.db
      .insertInto('webhook_events')
      .values({
        source_id: 'hashed',
        body_hash: 'before-forget',
        type: 'feedback',
        status: 'applied',
        body: JSON.stringify(body),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const result = await replayDeliveries(t.pool, t.db, { source: 'hashed' });
    expect(result).toMatchObject({ applied: result.replayed - 1, rejected: 1, nowRejected: 1 });
    expect(await t.db.selectFrom('webhook_events').select('id').where('id', '=', id).execute()).toEqual([]);
    expect(await rowsOf('hashed')).toBe(0);
  });

  it('forget --list prints each entry with the id as stored and when', async () => {
    const result = await cli(['forget', '--list']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^source\s+visitor \(as stored\)\s+form\s+forgotten at$/);
    expect(lines[1]).toMatch(new RegExp(`^hashed\\s+${hmac(PII_KEY, visitorId)}\\s+pseudonym\\s+\\d{4}-`));
    expect(lines[2]).toMatch(new RegExp(`^kept\\s+${visitorId}\\s+id\\s+\\d{4}-`));
    expect(lines[3]).toBe('2 entries');
    const one = await cli(['forget', '--list', '--source', 'hashed']);
    expect(one.stdout).toContain('1 entry');
    expect(one.stdout).not.toContain(visitorId);
    // --visitor and --list together, or neither: one clear line.
    expect((await cli(['forget', '--list', '--visitor', visitorId])).code).not.toBe(0);
    const neither = await cli(['forget']);
    expect(neither.code).not.toBe(0);
    expect(neither.stderr).toContain('expected --visitor ID, or --list');
  });

  it('unforget (with --help) takes the visitor off the list: the next backfill and deliveries store them again', async () => {
    const help = await cli(['unforget', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('suppression list');
    expect(help.stdout).toContain('--visitor <id>');

    const result = await cli(['unforget', '--visitor', visitorId, '--source', 'kept']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('removed from the suppression list of kept');
    expect(`${result.stdout}${result.stderr}`).not.toContain(visitorId);
    await sync({ from: FROM, to: TO });
    await replayWebhooks();
    // Back under kept (advance() may have added items of theirs); still nothing under hashed,
    // whose entry stays.
    expect(await rowsOf('kept')).toBeGreaterThan(2 * items);
    expect(await rowsOf('hashed')).toBe(0);

    const rest = await cli(['unforget', '--visitor', visitorId]);
    expect(rest.stdout).toContain('removed from the suppression list of hashed');
    const again = await cli(['unforget', '--visitor', visitorId]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('the visitor was not on the suppression list');
    expect((await cli(['forget', '--list'])).stdout).toBe('the suppression list is empty\n');
  });

  it("forget uses a configured source's pii setting, even for a source with no row yet", async () => {
    const outcome = await forget(t.db, {
      visitorId: 'v-never-seen',
      piiKey: PII_KEY,
      sources: [
        { name: 'fresh-hash', pii: { mode: 'drop', key: PII_KEY } },
        { name: 'fresh-keep' },
        { name: 'kept', pii: { mode: 'keep' } },
      ],
    });
    expect(Object.values(outcome.deleted).every((n) => n === 0)).toBe(true);
    const pseudonym = hmac(PII_KEY, 'v-never-seen');
    expect(outcome.suppressed).toEqual([
      { sourceId: 'fresh-hash', visitorId: pseudonym, hashed: true },
      { sourceId: 'fresh-keep', visitorId: 'v-never-seen', hashed: false },
      // Not configured here and no row of the visitor: the pseudonym, as a key is at hand.
      { sourceId: 'hashed', visitorId: pseudonym, hashed: true },
      { sourceId: 'kept', visitorId: 'v-never-seen', hashed: false },
    ]);
    await t.db
      .deleteFrom('suppressed_visitors')
      .where('visitor_id', 'in', ['v-never-seen', pseudonym])
      .execute();
  });

  it('forget --visitor of an id no row holds changes nothing and exits 1 (a typo is not an erasure); --not-seen-yet lists it', async () => {
    const listed = async () =>
      (await t.db.selectFrom('suppressed_visitors').select('visitor_id').execute()).map((r) => r.visitor_id);
    const before = await listed();
    const typo = await cli(['forget', '--visitor', 'v-no-such-visitor']);
    expect(typo.code, typo.stderr).toBe(1);
    expect(typo.stderr).toMatch(
      /^insights-sync: no row of this visitor in any source, and not on a suppression list: nothing deleted, nothing listed\. .*--not-seen-yet\n$/,
    );
    expect(typo.stderr).not.toContain('v-no-such-visitor');
    expect(await listed()).toEqual(before);

    const ahead = await cli([
      'forget',
      '--visitor',
      'v-no-such-visitor',
      '--not-seen-yet',
      '--source',
      'kept',
    ]);
    expect(ahead.code, ahead.stderr).toBe(0);
    expect(ahead.stdout).toContain('on the suppression list of kept');
    // Listed once, asking again is no typo: it is already on the list.
    const again = await cli(['forget', '--visitor', 'v-no-such-visitor', '--source', 'kept']);
    expect(again.code, again.stderr).toBe(0);
    await t.db.deleteFrom('suppressed_visitors').where('visitor_id', '=', 'v-no-such-visitor').execute();
  });

  it('forget waits for a writer that has read the list, so what it wrote is deleted too', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let read!: () => void;
    const hasRead = new Promise<void>((resolve) => {
      read = resolve;
    });
    // A window in flight: it read the list (visitor not on it) and is still writing.
    const writer = inTransaction(t.pool, async (trx) => {
      await suppressedVisitors(trx, 'kept', [visitorId]);
      read();
      await held;
    });
    await hasRead;
    let forgotten = false;
    const forgetting = forget(t.db, { visitorId, source: 'kept' }).then((outcome) => {
      forgotten = true;
      return outcome;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(forgotten).toBe(false);
    release();
    await writer;
    const outcome = await forgetting;
    expect(outcome.suppressed).toEqual([{ sourceId: 'kept', visitorId, hashed: false }]);
    expect(await rowsOf('kept')).toBe(0);
  });
});
