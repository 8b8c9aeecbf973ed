import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseBackends, sampleBackendCpu } from '../../bench/cpu.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The queue benchmark's PostgreSQL CPU counts the backends that end during the run too (a pool
 * closes a connection idle for 10 s): read only from the backends alive at the end, their work
 * was left out. Needs the server on this machine (/proc), as the benchmark does.
 */
describe("a database's backends' CPU over a span", () => {
  let t: TestDatabase;
  let name: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    name = new URL(t.url).pathname.slice(1);
  });
  afterAll(() => t.drop());

  it('counts a backend that did its work and ended within the span', async ({ skip }) => {
    await t.pool.query('select 1');
    if (databaseBackends(name).length === 0) skip('the server is not on this machine');
    const sampler = sampleBackendCpu(name, 50);
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    await client.query('select count(*) from generate_series(1, 3000000)');
    await new Promise((resolve) => setTimeout(resolve, 150));
    await client.end();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const { cpuMs, ended, samplerMs } = sampler.stop();
    expect(ended).toBeGreaterThanOrEqual(1);
    // Three million rows counted: well above 50 ms of CPU on any machine the benchmark runs on.
    expect(cpuMs).toBeGreaterThanOrEqual(50);
    expect(samplerMs).toBeGreaterThan(0);
  });
});
