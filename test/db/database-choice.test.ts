import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, cliEnv, collectOutput } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase, withSecretPassword } from '../helpers/database.js';

/** No DATABASE_URL is refused, not embedded silently; .env is read. */

const BIN = fileURLToPath(new URL('../../bin/insights-sync.js', import.meta.url));

/** The CLI in `cwd` (where its .env is read). */
function cliIn(cwd: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return collectOutput(child);
}

describe('the database a command uses', () => {
  let t: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'insights-dotenv-'));
  });
  afterAll(async () => {
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([['sync'], ['backfill', '--from', '2026-01-01'], ['status'], ['serve'], ['schedule'], ['migrate']])(
    '%s without DATABASE_URL: exit 2, one line naming DATABASE_URL and --embedded, no embedded database started',
    async (...args) => {
      const dataDir = join(dir, 'never');
      const result = await cliIn(
        dir,
        args,
        cliEnv({
          INSIGHTS_DATA_DIR: dataDir,
          INSIGHTS_API_URL: 'http://127.0.0.1:9',
          INSIGHTS_API_KEY: 'k',
          INSIGHTS_WEBHOOK_TOKEN: 'a'.repeat(32),
        }),
      );
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(
        `insights-sync: DATABASE_URL is not set: set it to the warehouse (postgres://..., in the environment or in .env), or pass --embedded (or set INSIGHTS_EMBEDDED=1) to use the embedded PostgreSQL in ${dataDir}\n`,
      );
      expect(existsSync(dataDir)).toBe(false);
    },
    60_000,
  );

  it('.env of the working directory is read, and status names the database (password masked)', async () => {
    const { url: withPassword, secret } = withSecretPassword(t.url, 'CANARY-dotenv');
    const url = new URL(withPassword);
    await writeFile(join(dir, '.env'), `# the warehouse\nDATABASE_URL=${url.toString()}\n\nLOG_LEVEL=warn\n`);
    try {
      const result = await cliIn(dir, ['status'], cliEnv({}));
      expect(result.code, result.stderr).toBe(0);
      url.password = '***';
      expect(result.stdout.split('\n')[0]).toBe(`warehouse: ${url.toString()} (schema ${t.schema})`);
      expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    } finally {
      await rm(join(dir, '.env'));
    }
  }, 60_000);

  it('a variable of the environment wins over .env', async () => {
    await writeFile(join(dir, '.env'), 'DATABASE_URL=postgres://nobody@127.0.0.1:9/none\n');
    try {
      const result = await cliIn(dir, ['status', '--json'], cliEnv({ DATABASE_URL: t.url }));
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ warehouse: { schema: t.schema }, healthy: true });
    } finally {
      await rm(join(dir, '.env'));
    }
  }, 60_000);

  it('a malformed .env: exit 2, naming the line, not its content', async () => {
    await writeFile(
      join(dir, '.env'),
      'DATABASE_URL=postgres://x@127.0.0.1/db\nCANARY secret without equals\n',
    );
    try {
      const result = await cliIn(dir, ['status'], cliEnv({}));
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        'insights-sync: .env line 2: expected KEY=value, a # comment or an empty line (the line is not shown: it may hold a secret)\n',
      );
    } finally {
      await rm(join(dir, '.env'));
    }
  }, 60_000);
});
