import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { everyTextOf } from '../reliability/warehouse-text.js';

const CANARY = 'CANARY-api-key-7f3a';

describe('the API key', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 2,
      from: '2026-03-01',
      to: '2026-03-05',
      apiKey: CANARY,
      faultRate: 0.3,
      malformedRate: 0.1,
      stallMs: 1000,
    });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('never reaches the database, whatever errors the run met', async () => {
    const now = new Date('2026-03-06T05:00:00.000Z');
    const runs = [
      await runAgainst(t, sim, { now, settings: { maxAttempts: 2, requestTimeoutMs: 200 } }),
      await runAgainst(t, sim, { now, sources: [simulatorSource(sim, 'wrong', `${CANARY}-wrong`)] }),
    ];
    // The runs did meet errors: failed windows, rejects, a rejected key.
    expect(runs.map((r) => r.status)).not.toContain('ok');
    const text = await everyTextOf(t);
    expect(text.length).toBeGreaterThan(1000);
    expect(text).not.toContain(CANARY);
  });

  it('never reaches the database from a base URL holding credentials, nor from refused endpoints', async () => {
    const password = 'CANARY-url-password-9c1e';
    const now = new Date('2026-03-06T05:00:00.000Z');
    // The config refuses such a URL (test/config/config.test.ts); a caller that bypasses it must not leak it either.
    const withPassword = sim.url.replace('http://', `http://CANARY-url-user:${password}@`);
    const refusedEverywhere = await runAgainst(t, sim, {
      now,
      sources: [{ name: 'credentials', baseUrl: withPassword, apiKey: CANARY }],
    });
    expect(refusedEverywhere.status).toBe('failed');
    expect(refusedEverywhere.error).toContain('holds credentials');
    expect(refusedEverywhere.error).not.toContain(password);
    sim.setOptions({ forbidden: ['recordings', 'abtesting/detail'], missing: ['heatmaps'] });
    try {
      const refused = await runAgainst(t, sim, { now, sources: [simulatorSource(sim, 'scoped', CANARY)] });
      expect(refused.status).toBe('partial');
    } finally {
      sim.setOptions({ forbidden: [], missing: [] });
    }
    const text = await everyTextOf(t);
    for (const secret of [CANARY, password, 'CANARY-url-user']) expect(text).not.toContain(secret);
    const sources = await t.db.selectFrom('sources').select(['source_id', 'base_url']).execute();
    expect(sources.find((s) => s.source_id === 'credentials')?.base_url).toBe('[unusable base URL]');
  });
});
