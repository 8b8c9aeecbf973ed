import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeDbtSources } from '../../src/dbt/dbt-sources.js';
import { cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/free-port.js';
import { checkExposition, samples } from '../metrics/check-exposition.js';

/** As a user runs them: the commands, not the functions behind them. */
describe('the analyst-facing commands', () => {
  let t: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    dir = await mkdtemp(path.join(tmpdir(), 'analyst-commands-'));
  });
  afterAll(async () => {
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('`dbt-sources --out models/sources.yml` writes the live schema’s sources.yml and says what it wrote', async () => {
    const out = path.join(dir, 'models', 'sources.yml');
    const result = await runCli(
      ['dbt-sources', '--out', out],
      cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^wrote .*sources\.yml: source \w+, \d+ tables and views\n$/);
    expect(await readFile(out, 'utf8')).toBe(await writeDbtSources(t.pool, t.schema));
  }, 60_000);

  it('`schedule` with INSIGHTS_METRICS_PORT serves GET /metrics (the exposition checks accept it) until SIGTERM', async () => {
    const free = await freePort();
    const cli = startCli(
      ['schedule'],
      cliEnv({
        DATABASE_URL: t.url,
        INSIGHTS_SCHEMA: t.schema,
        INSIGHTS_API_URL: 'http://127.0.0.1:9',
        INSIGHTS_API_KEY: 'k',
        INSIGHTS_METRICS_PORT: String(free),
      }),
    );
    let stdout = '';
    const port = await new Promise<number>((resolve, reject) => {
      cli.child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const found = /metrics: GET http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(stdout);
        if (found) resolve(Number(found[1]));
      });
      cli.done.then((r) => reject(new Error(`schedule ended: ${r.code} ${r.stderr}`)));
    });
    try {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      // Bound to loopback by default (INSIGHTS_METRICS_HOST), not every interface: another local
      // address of the machine is refused.
      await expect(fetch(`http://127.0.0.2:${port}/metrics`)).rejects.toThrow();
      const text = await response.text();
      const check = await checkExposition(text);
      expect(check, check.output).toEqual({ code: 0, output: '' });
      // Before any run the receiver's and the run's families may be empty, but the text is Prometheus's.
      expect(samples(text).every((s) => s.name.startsWith('insights_sync_'))).toBe(true);
    } finally {
      cli.child.kill('SIGTERM');
    }
    const ended = await cli.done;
    expect(ended.stdout).toContain('stopped.');
  }, 60_000);
});
