import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { looseModeWarning } from '../../src/config/dotenv.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase, withSecretPassword } from '../helpers/database.js';

/** .env holds every password and key: the CLI says so when others may read it. */
describe('the permissions of .env', () => {
  let t: TestDatabase;
  let dir: string;
  let file: string;
  /** The password in .env's DATABASE_URL: no output may show it. */
  let secret: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'insights-dotenv-mode-'));
    file = join(dir, '.env');
    const database = withSecretPassword(t.url, 'CANARY-dotenv');
    secret = database.secret;
    await writeFile(file, `DATABASE_URL=${database.url}\nINSIGHTS_SCHEMA=${t.schema}\n`);
  });
  afterAll(async () => {
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([['0644'], ['0604'], ['0640'], ['0660']])(
    'mode %s: the command runs, with one warning line naming the file and chmod 600',
    async (mode) => {
      await chmod(file, Number.parseInt(mode, 8));
      const result = await runCli(['status'], cliEnv({}), dir);
      expect(result.code, result.stderr).toBe(0);
      const lines = result.stderr.split('\n').filter((line) => line !== '');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0] ?? '')).toMatchObject({
        level: 'warn',
        msg: `${file} is open to users other than its owner (mode ${mode}) and holds passwords and keys: run chmod 600 ${file}`,
      });
      expect(`${result.stdout}${result.stderr}`).not.toContain(secret);
    },
    60_000,
  );

  it('mode 0600 (and 0400): no warning', async () => {
    for (const mode of [0o600, 0o400]) {
      await chmod(file, mode);
      const result = await runCli(['status'], cliEnv({}), dir);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).toBe('');
    }
  }, 60_000);

  it('says nothing on Windows, whose files carry no such mode bits', () => {
    expect(looseModeWarning('C:\\app\\.env', 0o100666, 'win32')).toBeUndefined();
    expect(looseModeWarning('/app/.env', 0o100600, 'linux')).toBeUndefined();
    expect(looseModeWarning('/app/.env', 0o100644, 'linux')).toContain('(mode 0644)');
  });
});
