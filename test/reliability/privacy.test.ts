import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SourceConfig } from '../../src/config/source-config.js';
import { forgetVisitor } from '../../src/privacy/forget-visitor.js';
import { hmac } from '../../src/privacy/pii.js';
import type { PiiPolicy } from '../../src/schemas/pii.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { capturingLogger, listen } from '../webhooks/webhook-helpers.js';
import { everyTextOf } from './warehouse-text.js';

const FROM = '2026-03-01';
const TO = '2026-03-06';
const NOW = new Date('2026-03-07T05:00:00.000Z');
// Base64 of 33 bytes (as the key rule asks), starting with a marker to search output for.
const PII_KEY = 'CANARYpiikeyN1QcOZkM04fCboqvtfG3CKBypF6tGx03';
const TOKEN = 'privacy-token-0123456789abcdef';

/** The three settings side by side, on three sources reading the same service. */
const POLICIES: Record<string, PiiPolicy> = {
  kept: { mode: 'keep' },
  hashed: { mode: 'hash', key: PII_KEY },
  dropped: { mode: 'drop', key: PII_KEY },
};

/** Bodies the receiver stores as rejected (unknown shapes), each with personal values in it. */
const REJECTED_BODIES = [
  {
    type: 'feedback',
    id: 'not-a-number',
    visitor: { id: 'v-rejected-1', email: 'rejected.one@mail.example' },
  },
  { type: 'unknown-kind', nested: { deeper: [{ name: 'Rejected Person Two', ip: '198.51.100.222' }] } },
  // U+0000 cannot be stored as jsonb: the body is kept as JSON text (body_text).
  {
    type: 'survey',
    id: 1,
    question_id: 2,
    question: 'q',
    answer: 'nul \u0000 here',
    session: 's',
    visitor: { id: 'v-rejected-3', name: 'Rejected Person Three', user_agent: 'RejectedAgent/3.0' },
  },
];

describe('pii: hash and drop write no clear-text personal value anywhere; keep does (the control)', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let receiver: WebhookServer;
  let logs: () => string;
  /** Personal values the service holds: visitors' (incl. their ids), recordings', rejected bodies'. */
  let personal: string[];

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 31, from: FROM, to: TO, cap: 4000, malformedRate: 0.1 });
    const capture = capturingLogger();
    logs = capture.lines;
    const sources: SourceConfig[] = Object.entries(POLICIES).map(([name, pii]) => ({
      name,
      baseUrl: sim.url,
      apiKey: sim.apiKey,
      webhookToken: TOKEN,
      pii,
    }));
    // Every setting: API sync (valid items, rejects), webhook deliveries (applied, rejected, unstorable).
    const result = await runAgainst(t, sim, {
      now: NOW,
      sources,
      settings: { maxInvalidShare: 1 },
      logger: capture.logger,
    });
    expect(result.status).toBe('ok');
    receiver = createWebhookServer({ pool: t.pool, logger: capture.logger, sources, bodyLimit: 64 * 1024 });
    const base = await listen(receiver);
    for (const name of Object.keys(POLICIES)) {
      const sent = await sim.sendWebhooks(`${base}/webhooks/${name}/${TOKEN}`, { limit: 30 });
      expect(sent.statuses.every((status) => status === 200)).toBe(true);
      for (const body of REJECTED_BODIES) {
        const response = await fetch(`${base}/webhooks/${name}/${TOKEN}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(response.status).toBe(422);
      }
    }

    const truth = sim.truth();
    const visitors = [...truth.feedback, ...truth.survey].map((item) => item.visitor);
    const malformedVisitors = [...truth.malformed.feedback, ...truth.malformed.survey]
      .map((item) => (item as { visitor?: unknown }).visitor)
      .filter((v): v is Record<string, string> => typeof v === 'object' && v !== null);
    personal = [
      ...new Set([
        ...[...visitors, ...malformedVisitors].flatMap((v) => [v.id, v.name, v.email, v.ip, v.user_agent]),
        ...truth.recordings.flatMap((r) => [r.user_ip, r.user_agent]),
        ...['v-rejected-1', 'rejected.one@mail.example', 'Rejected Person Two', '198.51.100.222'],
        ...['v-rejected-3', 'Rejected Person Three', 'RejectedAgent/3.0'],
      ]),
    ].filter((value): value is string => typeof value === 'string' && value.length >= 6);
    expect(personal.length).toBeGreaterThan(200);
  });
  afterAll(async () => {
    await receiver?.close();
    await sim.stop();
    await t.drop();
  });

  const leaks = (text: string) => personal.filter((value) => text.includes(value));

  it('keep: the personal values are in the tables (the test can see them)', async () => {
    const text = await everyTextOf(t, { source: 'kept' });
    expect(leaks(text).length).toBeGreaterThan(personal.length * 0.9);
  });

  for (const source of ['hashed', 'dropped']) {
    it(`${source}: not one personal value in any row of any table, raw and rejects and webhook_events included`, async () => {
      const text = await everyTextOf(t, { source });
      expect(text.length).toBeGreaterThan(50_000);
      expect(leaks(text)).toEqual([]);
      const rejects = await t.db
        .selectFrom('rejects')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('source_id', '=', source)
        .executeTakeFirstOrThrow();
      expect(Number(rejects.n)).toBeGreaterThan(0);
      const kinds = await t.db
        .selectFrom('webhook_events')
        .select(['status', sql<boolean>`body_text is not null`.as('as_text')])
        .where('source_id', '=', source)
        .execute();
      expect(new Set(kinds.map((k) => `${k.status}/${k.as_text}`))).toEqual(
        new Set(['applied/false', 'rejected/false', 'rejected/true']),
      );
    });
  }

  it('no log line, at level trace, carries a personal value or the HMAC key', () => {
    const text = logs();
    expect(text.length).toBeGreaterThan(1000);
    // The kept source's values may be logged only as much as the others' (not at all).
    expect(leaks(text)).toEqual([]);
    expect(text).not.toContain(PII_KEY);
  });

  it('hash: analysts still join feedback to visitors and count distinct visitors and e-mail addresses', async () => {
    const per = await sql<{ source_id: string; visitors: number; emails: number; orphans: number }>`
      select v.source_id, count(distinct v.id)::int as visitors, count(distinct v.email)::int as emails,
             (select count(*)::int from feedback f where f.source_id = v.source_id
                and not exists (select 1 from visitors w where w.source_id = f.source_id and w.id = f.visitor_id)) as orphans
      from visitors v group by v.source_id order by v.source_id`.execute(t.db);
    const bySource = Object.fromEntries(per.rows.map((r) => [r.source_id, r]));
    expect(bySource.hashed?.visitors).toBe(bySource.kept?.visitors);
    expect(bySource.hashed?.emails).toBe(bySource.kept?.emails);
    expect(bySource.dropped?.visitors).toBe(bySource.kept?.visitors);
    expect(bySource.dropped?.emails).toBe(0);
    for (const row of per.rows) expect(row.orphans, row.source_id).toBe(0);
    // The pseudonym is the keyed HMAC of the service's id: forget can find it.
    const someone = sim.truth().feedback[0]?.visitor;
    const pseudonym = await t.db
      .selectFrom('visitors')
      .select(['email', 'name'])
      .where('source_id', '=', 'hashed')
      .where('id', '=', hmac(PII_KEY, someone?.id ?? ''))
      .executeTakeFirstOrThrow();
    expect(pseudonym.email).toBe(hmac(PII_KEY, someone?.email ?? ''));
  });

  it('drop: the personal columns are null, in the tables and in raw', async () => {
    const counts = await sql<{ filled: number; raw_filled: number; recordings_filled: number }>`
      select (select count(*)::int from visitors where source_id = 'dropped'
                and (name is not null or email is not null or ip is not null or user_agent is not null)) as filled,
             (select count(*)::int from feedback where source_id = 'dropped'
                and jsonb_strip_nulls(raw->'visitor') ?| array['name', 'email', 'ip', 'user_agent']) as raw_filled,
             (select count(*)::int from recordings where source_id = 'dropped'
                and (user_ip is not null or user_agent is not null or raw->>'user_ip' is not null)) as recordings_filled`.execute(
      t.db,
    );
    expect(counts.rows[0]).toEqual({ filled: 0, raw_filled: 0, recordings_filled: 0 });
  });

  it('forget --visitor deletes the visitor and every row of theirs, under keep and under hash, and nothing else', async () => {
    const truth = sim.truth();
    const counts = new Map<string, number>();
    for (const item of [...truth.feedback, ...truth.survey])
      counts.set(item.visitor.id, (counts.get(item.visitor.id) ?? 0) + 1);
    const [first, second] = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([id]) => id);
    const rowsOf = async (source: string, storedId: string) => {
      const result = await sql<{ n: number }>`
        select (select count(*) from visitors where source_id = ${source} and id = ${storedId})
             + (select count(*) from feedback where source_id = ${source} and visitor_id = ${storedId})
             + (select count(*) from survey_answers where source_id = ${source} and visitor_id = ${storedId})
             + (select count(*) from webhook_events where source_id = ${source} and body->'visitor'->>'id' = ${storedId})
             + (select count(*) from rejects where source_id = ${source} and item->'visitor'->>'id' = ${storedId}) as n`.execute(
        t.db,
      );
      return Number(result.rows[0]?.n ?? -1);
    };
    const total = async () => {
      const result = await sql<{ n: number }>`
        select (select count(*) from visitors) + (select count(*) from feedback)
             + (select count(*) from survey_answers) + (select count(*) from webhook_events)
             + (select count(*) from rejects) as n`.execute(t.db);
      return Number(result.rows[0]?.n ?? -1);
    };
    const id = first as string;
    const before = await total();
    const keptRows = await rowsOf('kept', id);
    expect(keptRows).toBeGreaterThan(2);
    const kept = await forgetVisitor(t.db, { visitorId: id, source: 'kept' });
    expect(Object.values(kept).reduce((a, b) => a + b, 0)).toBe(keptRows);
    expect(await rowsOf('kept', id)).toBe(0);
    expect(await total()).toBe(before - keptRows);

    const hashedRows = await rowsOf('hashed', hmac(PII_KEY, id));
    expect(hashedRows).toBe(keptRows);
    const hashed = await forgetVisitor(t.db, { visitorId: id, source: 'hashed', piiKey: PII_KEY });
    expect(hashed.visitors).toBe(1);
    expect(await rowsOf('hashed', hmac(PII_KEY, id))).toBe(0);
    expect(await total()).toBe(before - keptRows - hashedRows);

    // The command, through the CLI, for every source at once (the key finds the pseudonyms).
    const other = second as string;
    const expected =
      (await rowsOf('kept', other)) +
      (await rowsOf('hashed', hmac(PII_KEY, other))) +
      (await rowsOf('dropped', hmac(PII_KEY, other)));
    const cli = await runCli(
      ['forget', '--visitor', other],
      cliEnv({ DATABASE_URL: t.url, INSIGHTS_PII_KEY: PII_KEY }),
    );
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`deleted ${expected} rows of the visitor: visitors 3,`);
    expect(`${cli.stdout}${cli.stderr}`).not.toContain(other);
    expect(`${cli.stdout}${cli.stderr}`).not.toContain(PII_KEY);
  });
});
