import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { canonicalJson } from '../../src/db/canonical-json.js';
import { silentLogger } from '../../src/log/logger.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { runSync, type SyncRequest } from '../../src/sync/run-sync.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { simulatorSource, TEST_SETTINGS } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';
import { watchUnhandled } from './unhandled.js';

/**
 * Guarantee 7: bad API responses. One feedback day per kind of badness, served by a fetch that
 * rewrites the simulator's answers. A broken response (cut JSON, not an array, HTML, junk) is the
 * answer to the day's own request; a bad item is bad in every answer that holds it. Each day
 * fails or quarantines as it should, the run never crashes, and no valid item is lost: once the
 * service is fixed, a backfill makes the warehouse equal the ground truth. The reading of the
 * server (inclusive bounds, UTC days) is known before the first run, so each day is asked alone.
 */

const FROM = '2026-02-10';
const TO = '2026-03-11';
const NOW = new Date('2026-03-12T05:00:00.000Z');
const HUGE = 2_000_000;

type Item = Record<string, unknown>;
interface Served {
  body: string;
  status?: number;
  contentType?: string;
}
/** Rewrites the items the simulator served for one day (only that day's items are touched). */
type Badness = (items: Item[], day: string) => Served;
/** Badness of the whole answer: only the day's own request gets it. */
const WHOLE_RESPONSE = new Set(['malformedJson', 'notAnArray', 'htmlWith200', 'junkMembers']);

const json = (items: unknown[]): Served => ({ body: JSON.stringify(items) });
/** Applies `change` to the first `n` items of the day (items of the next day are left alone). */
const onDayItems = (items: Item[], day: string, n: number, change: (item: Item, index: number) => Item) => {
  let changed = 0;
  return items.map((item) =>
    String(item.dt).startsWith(day) && changed < n ? change(item, changed++) : item,
  );
};

const BADNESS: Record<string, Badness> = {
  malformedJson: (items) => ({ body: JSON.stringify(items).slice(0, -40) }),
  notAnArray: (items) => ({ body: JSON.stringify({ items }) }),
  htmlWith200: () => ({
    body: '<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>',
    contentType: 'text/html',
  }),
  wrongTypes: (items, day) => json(onDayItems(items, day, 1, (item) => ({ ...item, rating: 'five' }))),
  missingKeys: (items, day) =>
    json(
      onDayItems(items, day, 1, (item) => {
        const { visitor: _dropped, ...rest } = item;
        return rest;
      }),
    ),
  hugeStrings: (items, day) =>
    json(
      onDayItems(items, day, 1, (item) => ({ ...item, comment: 'x'.repeat(HUGE), x_blob: 'y'.repeat(HUGE) })),
    ),
  unknownFields: (items, day) => {
    const withExtras = onDayItems(items, day, 3, (item) => ({
      ...item,
      x_new_field: { nested: [1, 'two', { three: null }] },
    }));
    // One item with a "__proto__" key: quarantined (a parsed copy would drop the key).
    const text = JSON.stringify(onDayItems(withExtras, day, 1, (item) => ({ ...item, x_marker: 1 })));
    return { body: text.replace('"x_marker":1', '"__proto__":{"polluted":true}') };
  },
  duplicateKeys: (items, day) => {
    const copies = items.filter((item) => String(item.dt).startsWith(day)).slice(0, 2);
    // Same key, different content, before and after the original: the result must not depend on order.
    return json([
      { ...copies[0], comment: 'a different copy' },
      ...items,
      { ...copies[1], comment: 'another different copy' },
    ]);
  },
  tooManyInvalid: (items, day) => {
    const count = items.filter((item) => String(item.dt).startsWith(day)).length;
    return json(
      onDayItems(items, day, Math.ceil(count * 0.25), (item) => ({ ...item, id: `bad-${item.id}` })),
    );
  },
  junkMembers: (items) => json([...items, null]),
};

describe('bad API responses', () => {
  let t: TestDatabase;
  let sim: Simulator;
  /** Day -> the kind of badness served for it; emptied to "fix" the service. */
  const served = new Map<string, { kind: string; badness: Badness }>();
  const dayOf: Record<string, string> = {};
  const unhandled = watchUnhandled();

  const fetchThroughBadness: typeof fetch = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    const url = new URL(String(input));
    if (url.pathname !== '/v1/feedback' || response.status !== 200 || served.size === 0) return response;
    const startdate = url.searchParams.get('startdate');
    const alone = startdate === url.searchParams.get('enddate');
    let items = (await response.json()) as Item[];
    for (const [day, { kind, badness }] of served) {
      if (WHOLE_RESPONSE.has(kind)) {
        if (!alone || startdate !== day) continue;
        const out = badness(items, day);
        return new Response(out.body, {
          status: out.status ?? 200,
          headers: { 'content-type': out.contentType ?? 'application/json' },
        });
      }
      if (items.some((item) => String(item.dt).startsWith(day)))
        items = JSON.parse(badness(items, day).body) as Item[];
    }
    return new Response(JSON.stringify(items), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };

  function run(request: Partial<SyncRequest>, settings = {}): Promise<RunResult> {
    return runSync(
      {
        pool: t.pool,
        db: t.db,
        logger: silentLogger(),
        now: () => NOW,
        sources: [simulatorSource(sim)],
        settings: { ...TEST_SETTINGS, startDate: FROM, ...settings },
        createClient: (source) =>
          createApiClient({
            source,
            fetch: fetchThroughBadness,
            retry: { maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0, retryAfterCapMs: 0 },
            sleep: async () => {},
          }),
      },
      { trigger: 'sync', resources: ['feedback'], ...request },
    );
  }

  const feedbackOn = async (day: string) => {
    const rows = await sql<{ id: number; feedback_id: number }>`
      select id, feedback_id from feedback where dt >= ${day}::date and dt < ${day}::date + 1 order by id, feedback_id`.execute(
      t.db,
    );
    return rows.rows.map((r) => `${r.id}/${r.feedback_id}`);
  };
  const truthOn = (day: string) =>
    sim
      .truth()
      .feedback.filter((f) => f.dt.startsWith(day))
      .map((f) => `${f.id}/${f.feedback_id}`)
      .sort((a, b) => (a < b ? -1 : 1));

  let first: RunResult;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 1,
      from: FROM,
      to: TO,
      cap: 4000,
      volume: { feedbackPerDay: 40, busyDayFeedback: 100 },
    });
    // The busiest days carry the badness: one bad item stays under the 5% share.
    const counts = new Map<string, number>();
    for (const item of sim.truth().feedback)
      counts.set(item.dt.slice(0, 10), (counts.get(item.dt.slice(0, 10)) ?? 0) + 1);
    const busy = [...counts].filter(([, n]) => n >= 25).map(([day]) => day);
    const kinds = Object.keys(BADNESS);
    expect(busy.length).toBeGreaterThanOrEqual(kinds.length);
    kinds.forEach((kind, i) => {
      const day = busy[i * 2] ?? busy[i] ?? '';
      dayOf[kind] = day;
      served.set(day, { kind, badness: BADNESS[kind] as Badness });
    });
    // Learned before: inclusive bounds and UTC days (items seen a minute after and before midnight).
    await t.db.insertInto('sources').values({ source_id: 'main', base_url: sim.url }).execute();
    await t.db
      .insertInto('server_readings')
      .values({ source_id: 'main', resource: 'feedback', head_ms: 60_000, tail_ms: 86_340_000 })
      .execute();
    first = await run({});
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('the run ends (partial), with exactly the unreadable days and the day of too many invalid items failed', () => {
    expect(first.status).toBe('partial');
    const failed = first.windows.filter((w) => w.status === 'failed');
    expect(Object.fromEntries(failed.map((w) => [w.day, w.error]))).toEqual({
      [dayOf.malformedJson as string]: expect.stringMatching(
        /response is not JSON \(malformed JSON, \d+ characters\)/,
      ),
      [dayOf.notAnArray as string]: expect.stringMatching(/expected a JSON array, got object/),
      [dayOf.htmlWith200 as string]: expect.stringMatching(
        /response is not JSON \(body starts with "<!DOCTYPE html>/,
      ),
      [dayOf.tooManyInvalid as string]: expect.stringMatching(
        /^\d+ of \d+ items invalid \(2\d%, above the 5\.0% allowed/,
      ),
    });
    expect(unhandled()).toEqual([]);
  });

  it('a failed day stays failed in the ledger, holding the watermark back; what of it is stored came whole from other answers', async () => {
    for (const kind of ['malformedJson', 'notAnArray', 'htmlWith200', 'tooManyInvalid']) {
      const day = dayOf[kind] as string;
      // A neighbour's wider request may have held some of its items, as served well there.
      expect(truthOn(day), kind).toEqual(expect.arrayContaining(await feedbackOn(day)));
      const ledger = await t.db
        .selectFrom('sync_windows')
        .select(['status', 'last_error'])
        .where('day', '=', day)
        .executeTakeFirstOrThrow();
      expect(ledger.status, kind).toBe('failed');
    }
    const mark = await t.db.selectFrom('watermarks').select('day').executeTakeFirst();
    expect((mark?.day ?? '') < (dayOf.malformedJson as string)).toBe(true);
  });

  it('a bad item is quarantined verbatim, with its error, and the rest of its day loads', async () => {
    for (const [kind, lost] of [
      ['wrongTypes', 1],
      ['missingKeys', 1],
      ['unknownFields', 1],
      ['junkMembers', 0],
    ] as const) {
      const day = dayOf[kind] as string;
      const truth = truthOn(day);
      const loaded = await feedbackOn(day);
      expect(loaded.length, kind).toBe(truth.length - lost);
      expect(truth, kind).toEqual(expect.arrayContaining(loaded));
      const window = first.windows.find((w) => w.day === day);
      expect(window?.status, kind).toBe('done');
      expect(window?.rejected, kind).toBe(1);
    }
    const rejects = await t.db.selectFrom('rejects').select(['day', 'item', 'error']).execute();
    const errorOn = (kind: string) => rejects.filter((r) => r.day === dayOf[kind]).map((r) => r.error);
    expect(errorOn('wrongTypes')).toEqual([expect.stringContaining('rating')]);
    expect(errorOn('missingKeys')).toEqual([expect.stringContaining('visitor')]);
    expect(errorOn('unknownFields')).toEqual([expect.stringContaining('"__proto__" key')]);
    expect(errorOn('junkMembers')).toEqual([expect.stringContaining('(item)')]);
    const proto = rejects.find((r) => r.day === dayOf.unknownFields);
    expect(Object.keys(proto?.item as object)).toContain('__proto__');
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    // The day that failed for its share of invalid items kept them for inspection too.
    expect(errorOn('tooManyInvalid').length).toBeGreaterThan(5);
  });

  it('huge strings and unknown fields load as they came; duplicate keys become one row, whatever their order', async () => {
    const huge = await sql<{ n: number; blob: number }>`
      select length(comment)::int as n, length(raw->>'x_blob')::int as blob from feedback where length(comment) > 1000`.execute(
      t.db,
    );
    expect(huge.rows).toEqual([{ n: HUGE, blob: HUGE }]);
    const extras = await sql<{ n: number }>`
      select count(*)::int as n from feedback where raw->'x_new_field' = '{"nested": [1, "two", {"three": null}]}'::jsonb`.execute(
      t.db,
    );
    // Three items got the field; the first of them also the "__proto__" key, which quarantined it.
    expect(extras.rows[0]?.n).toBe(2);

    const day = dayOf.duplicateKeys as string;
    expect(await feedbackOn(day)).toEqual(truthOn(day));
    const window = first.windows.find((w) => w.day === day);
    expect(window?.conflicts).toBe(2);
    // The copy whose canonical JSON sorts last wins: the same row whichever order they came in.
    const originals = sim
      .truth()
      .feedback.filter((f) => f.dt.startsWith(day))
      .slice(0, 2);
    const winners = originals.map((original, i) => {
      const copy = { ...original, comment: i === 0 ? 'a different copy' : 'another different copy' };
      return canonicalJson(copy) > canonicalJson(original) ? copy : original;
    });
    for (const winner of winners) {
      const row = await t.db
        .selectFrom('feedback')
        .select('comment')
        .where('id', '=', winner.id)
        .where('feedback_id', '=', winner.feedback_id)
        .executeTakeFirstOrThrow();
      expect(row.comment).toBe(winner.comment);
    }
  });

  it('the share of invalid items is a setting: at 30% the day of 25% bad items loads its valid ones', async () => {
    const day = dayOf.tooManyInvalid as string;
    const result = await run(
      { trigger: 'backfill', range: { from: day, to: day } },
      { maxInvalidShare: 0.3 },
    );
    expect(result.status).toBe('ok');
    const truth = truthOn(day);
    expect((await feedbackOn(day)).length).toBe(truth.length - Math.ceil(truth.length * 0.25));
  });

  it('once the service answers well again, a backfill loses nothing: the warehouse equals the ground truth', async () => {
    served.clear();
    const fixed = await run({ trigger: 'backfill', range: { from: FROM, to: TO } });
    expect(fixed.status).toBe('ok');
    const stored = await warehouseItems(t);
    expect(stored.feedback).toEqual(truthItems(sim.truth()).feedback);
    expect((stored.feedback as Feedback[]).length).toBeGreaterThan(500);
    expect(unhandled()).toEqual([]);
  });
});
