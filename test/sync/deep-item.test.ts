import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/api-client.js';
import { silentLogger } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { runSync } from '../../src/sync/run-sync.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { simulatorSource, TEST_SETTINGS } from '../helpers/sync-harness.js';

/**
 * One feedback item nested 20,000 levels deep, served in every answer that holds it (its own
 * day's and its neighbours'). JSON.parse reads it; anything that recursed into it afterwards
 * (sizing the answer, an item's identity, the schema) overflowed the stack and failed the day's
 * window. Now the item is rejected as nested too deep and its day loads.
 */
const FROM = '2026-03-01';
const TO = '2026-03-07';
const NOW = new Date('2026-03-08T05:00:00.000Z');
const DEPTH = 20_000;

type Item = Record<string, unknown>;

describe('an item nested 20,000 levels deep', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let result: RunResult;
  let deep: { id: number; feedback_id: number; day: string };

  /** The item with a field nesting DEPTH arrays, as JSON text: JSON.stringify could not write it. */
  const deepText = (item: Item) =>
    `${JSON.stringify(item).slice(0, -1)},"x_deep":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}}`;

  const fetchWithDeepItem: typeof fetch = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    if (new URL(String(input)).pathname !== '/v1/feedback' || response.status !== 200) return response;
    const items = (await response.json()) as Item[];
    const body = items
      .map((item) =>
        item.id === deep.id && item.feedback_id === deep.feedback_id ? deepText(item) : JSON.stringify(item),
      )
      .join(',');
    return new Response(`[${body}]`, { status: 200, headers: { 'content-type': 'application/json' } });
  };

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({ seed: 4, from: FROM, to: TO });
    const middle = sim.truth().feedback.filter((f) => f.dt.startsWith('2026-03-04'));
    const chosen = middle[Math.floor(middle.length / 2)];
    if (chosen === undefined) throw new Error('no feedback on 2026-03-04');
    deep = { id: chosen.id, feedback_id: chosen.feedback_id, day: '2026-03-04' };
    result = await runSync(
      {
        pool: t.pool,
        db: t.db,
        logger: silentLogger(),
        now: () => NOW,
        sources: [simulatorSource(sim)],
        settings: { ...TEST_SETTINGS, startDate: FROM },
        createClient: (source) =>
          createApiClient({
            source,
            fetch: fetchWithDeepItem,
            retry: { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0, retryAfterCapMs: 0 },
            sleep: async () => {},
          }),
      },
      { trigger: 'sync', resources: ['feedback'] },
    );
  }, 60_000);
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('fails no window: the run is ok', () => {
    expect(result.windows.filter((w) => w.status === 'failed').map((w) => `${w.day}: ${w.error}`)).toEqual(
      [],
    );
    expect(result.status).toBe('ok');
  });

  it('is in rejects, once, as nested too deep', async () => {
    const rejects = await sql<{ id: string; day: string; error: string }>`
      select item->>'id' as id, day::text as day, error from rejects where resource = 'feedback'`.execute(
      t.db,
    );
    expect(rejects.rows).toHaveLength(1);
    expect(rejects.rows[0]).toMatchObject({ id: String(deep.id), day: deep.day });
    expect(rejects.rows[0]?.error).toContain('nested deeper than 64 levels');
  });

  it('every other item of its day, and of the others, is stored', async () => {
    const stored = await sql<{ key: string }>`
      select id || '/' || feedback_id as key from feedback order by dt, id, feedback_id`.execute(t.db);
    const expected = sim
      .truth()
      .feedback.filter((f) => !(f.id === deep.id && f.feedback_id === deep.feedback_id))
      .map((f) => `${f.id}/${f.feedback_id}`);
    expect(stored.rows.map((r) => r.key).sort()).toEqual(expected.sort());
    expect(expected.length).toBeGreaterThan(10);
  });
});
