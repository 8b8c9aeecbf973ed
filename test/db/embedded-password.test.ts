import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { startEmbeddedPostgres, withPasswordFile } from '../../src/db/embedded.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';

/**
 * The embedded database's superuser password is never printed, it is kept in
 * a file of mode 0600, and the file initdb reads it from
 * (`<tmpdir>/pg-password-*`) is out of other local users' reach while initdb runs.
 */

const mode = (file: string) => statSync(file).mode & 0o777;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('withPasswordFile', () => {
  test('the file is 0600, alone in a fresh directory of mode 0700, removed afterwards', async () => {
    const seen = await withPasswordFile(os.tmpdir(), 'secret', undefined, async (file) => {
      const directory = path.dirname(file);
      return {
        file,
        content: await fs.readFile(file, 'utf8'),
        fileMode: mode(file),
        directoryMode: mode(directory),
        owner: statSync(directory).uid,
      };
    });
    expect(seen.file.startsWith(path.join(os.tmpdir(), 'insights-sync-initdb-'))).toBe(true);
    expect(seen.content).toBe('secret\n');
    expect(seen.fileMode).toBe(0o600);
    expect(seen.directoryMode).toBe(0o700);
    expect(seen.owner).toBe(process.getuid?.());
    await expect(fs.access(path.dirname(seen.file))).rejects.toThrow();
  });

  test('as root, directory and file belong to the user initdb runs as, still 0700 and 0600', async () => {
    if (process.getuid?.() !== 0) return; // only root can hand a directory to another user
    const runAs = { uid: 4242, gid: 4243 };
    const seen = await withPasswordFile(os.tmpdir(), 'secret', runAs, async (file) => ({
      directory: statSync(path.dirname(file)),
      file: statSync(file),
    }));
    expect([seen.directory.uid, seen.directory.gid, seen.directory.mode & 0o777]).toEqual([
      4242, 4243, 0o700,
    ]);
    expect([seen.file.uid, seen.file.gid, seen.file.mode & 0o777]).toEqual([4242, 4243, 0o600]);
  });
});

describe('embedded PostgreSQL', () => {
  test('initdb reads its password from a private directory; the kept password file is 0600', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-embedded-password-'));
    await fs.rm(dataDir, { recursive: true });
    // The password is written with fs/promises' writeFile: look at the file as it is written.
    const written: { file: string; fileMode: number; directoryMode: number; directoryOwner: number }[] = [];
    const writeFile = fs.writeFile;
    vi.spyOn(fs, 'writeFile').mockImplementation(async (...args: Parameters<typeof fs.writeFile>) => {
      await writeFile(...args);
      const file = args[0];
      if (typeof file === 'string' && path.basename(file).startsWith('pg-password-')) {
        const directory = path.dirname(file);
        written.push({
          file,
          fileMode: mode(file),
          directoryMode: mode(directory),
          directoryOwner: statSync(directory).uid,
        });
      }
    });
    const server = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false });
    try {
      expect(written).toHaveLength(1);
      const [entry] = written;
      // Whatever the file's own mode, no other user can reach it: its directory is 0700.
      expect(entry?.directoryMode).toBe(0o700);
      expect(path.dirname(entry?.file ?? '')).not.toBe(os.tmpdir());
      expect(entry?.file.startsWith(path.join(os.tmpdir(), 'insights-sync-initdb-'))).toBe(true);
      await expect(fs.access(path.dirname(entry?.file ?? ''))).rejects.toThrow(); // removed after
      expect(server.passwordFile).toBe(path.join(dataDir, 'insights-sync.password'));
      expect(mode(server.passwordFile)).toBe(0o600);
      const password = (await fs.readFile(server.passwordFile, 'utf8')).trim();
      expect(server.url).toContain(`:${password}@`);
    } finally {
      await server.stop();
    }
  }, 60_000);

  test('the CLI prints the embedded connection string with the password masked', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-embedded-cli-'));
    const port = await freePort();
    try {
      const result = await runCli(
        // migrate: status does not migrate, and on a new embedded database says so (exit 2).
        ['migrate', '--embedded'],
        cliEnv({ INSIGHTS_DATA_DIR: dataDir, INSIGHTS_EMBEDDED_PORT: String(port) }),
      );
      expect(result.code, result.stderr).toBe(0);
      const password = (await fs.readFile(path.join(dataDir, 'insights-sync.password'), 'utf8')).trim();
      expect(password.length).toBeGreaterThanOrEqual(20);
      expect(`${result.stdout}${result.stderr}`).not.toContain(password);
      expect(result.stderr).toContain(
        `DATABASE_URL is not set: embedded PostgreSQL (data in ${dataDir}) at postgres://postgres:***@127.0.0.1:${port}/postgres while this command runs; password in ${path.join(dataDir, 'insights-sync.password')}\n`,
      );
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
