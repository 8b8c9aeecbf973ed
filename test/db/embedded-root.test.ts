import { statSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, test } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { locateBinaries, type PostgresBinaries } from '../../src/db/embedded-binaries.js';
import { ancestors, firstUnsafe, firstUntraversable } from '../../src/db/embedded-root.js';
import { freePort } from '../helpers/free-port.js';
import { type RequiredTool, requireTool } from '../helpers/required-tool.js';

/**
 * Run as root, the embedded PostgreSQL runs as the `postgres` user, which must reach its programs
 * and its data directory. From a directory it cannot pass through (a clone under /root, any
 * directory of mode 0700), the programs are copied to a root-only place and the data directory
 * goes there too; as any other user, nothing moves.
 */

const POSTGRES = { uid: 101, gid: 104 };
const dir = (mode: number, uid = 0, gid = 0) => ({ path: `/d${mode.toString(8)}-${uid}`, uid, gid, mode });

describe('firstUntraversable', () => {
  test('a directory of mode 0700 owned by root stops the postgres user', () => {
    const chain = [dir(0o755), dir(0o700), dir(0o755)];
    expect(firstUntraversable(chain, POSTGRES)).toBe('/d700-0');
  });

  test('x for others, or for its group or as its owner, lets it through', () => {
    expect(
      firstUntraversable([dir(0o711), dir(0o750, 0, 104), dir(0o700, 101, 0)], POSTGRES),
    ).toBeUndefined();
  });

  test('the owner bits decide for its owner, even when others may pass', () => {
    expect(firstUntraversable([dir(0o607, 101)], POSTGRES)).toBe('/d607-101');
  });

  test('group bits count only for its primary group (a spawned program has no other)', () => {
    expect(firstUntraversable([dir(0o750, 0, 103)], POSTGRES)).toBe('/d750-0');
  });
});

describe('firstUnsafe', () => {
  test('root-owned directories writable by root alone are safe', () => {
    expect(firstUnsafe([dir(0o755), dir(0o755)])).toBeUndefined();
  });

  test('a sticky world-writable parent such as /tmp is safe; the base itself may not be', () => {
    expect(firstUnsafe([dir(0o755), dir(0o1777)])).toBeUndefined();
    expect(firstUnsafe([dir(0o1777), dir(0o755)])).toBe('/d1777-0');
  });

  test('another owner, a group- or world-writable parent, or a symlink is unsafe', () => {
    expect(firstUnsafe([dir(0o755, 1000)])).toBe('/d755-1000');
    expect(firstUnsafe([dir(0o755), dir(0o775)])).toBe('/d775-0');
    expect(firstUnsafe([{ ...dir(0o777), isSymbolicLink: true }])).toBe('/d777-0');
  });
});

test('ancestors lists a path and every directory above it, up to /', () => {
  expect(ancestors('/root/private/repo')).toEqual(['/root/private/repo', '/root/private', '/root', '/']);
});

/** The server started on a port of this test process's own (free-port.ts). */
async function startOnFreePort(
  options: Omit<Parameters<typeof startEmbeddedPostgres>[0], 'port'>,
): ReturnType<typeof startEmbeddedPostgres> {
  return startEmbeddedPostgres({ ...options, port: await freePort() });
}

const cleanup: string[] = [];
afterEach(async () => {
  for (const entry of cleanup.splice(0)) await fs.rm(entry, { recursive: true, force: true });
});

/** A copy of the package's binaries inside a directory of mode 0700, as in a clone under /root. */
async function binariesInPrivateDirectory(): Promise<{ privateDir: string; binaries: PostgresBinaries }> {
  const installed = await locateBinaries();
  const privateDir = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-private-'));
  cleanup.push(privateDir);
  expect(statSync(privateDir).mode & 0o777).toBe(0o700);
  const nativeDir = path.join(privateDir, 'node_modules', 'native');
  await fs.cp(installed.nativeDir, nativeDir, { recursive: true, verbatimSymlinks: true });
  const moved = (file: string) => path.join(nativeDir, path.relative(installed.nativeDir, file));
  return {
    privateDir,
    binaries: {
      ...installed,
      nativeDir,
      initdb: moved(installed.initdb),
      postgres: moved(installed.postgres),
    },
  };
}

/** Bases as ROOT_PATHS are: owned by root, 0755, in a sticky /tmp. */
async function rootPaths() {
  const base = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-root-'));
  cleanup.push(base);
  await fs.chmod(base, 0o755);
  return { binaries: path.join(base, 'cache'), data: path.join(base, 'lib') };
}

/** Only root runs the server as another user: the case exists for root alone (CI runs as root). */
const ROOT: RequiredTool = {
  name: 'root',
  check: 'the embedded PostgreSQL as root from a directory of mode 0700',
  install: 'run the tests as root (CI does)',
};

describe('as root, from a directory of mode 0700', () => {
  test('the server starts from a root-only copy of the binaries, with its data beside it', async (context) => {
    if (!requireTool(ROOT, process.getuid?.() === 0)) return context.skip();
    const { privateDir, binaries } = await binariesInPrivateDirectory();
    const paths = await rootPaths();
    const dataDir = path.join(privateDir, 'data');
    const start = async () =>
      startOnFreePort({
        dataDir,
        binaries,
        rootPaths: paths,
        persistent: true,
      });

    const server = await start();
    try {
      expect(server.dataDir.startsWith(`${paths.data}${path.sep}data-`)).toBe(true);
      expect(server.passwordFile).toBe(path.join(server.dataDir, 'insights-sync.password'));
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      await client.end();
    } finally {
      await server.stop();
    }
    const [copy, ...others] = await fs.readdir(paths.binaries);
    expect(others).toEqual([]);
    expect(copy).toMatch(new RegExp(`^postgres-${binaries.version.replaceAll('.', '\\.')}-[0-9a-f]{16}$`));
    const copied = statSync(path.join(paths.binaries, copy ?? '', 'bin', 'initdb'));
    expect([copied.uid, copied.mode & 0o777]).toEqual([0, 0o755]);
    await expect(fs.access(dataDir)).rejects.toThrow(); // nothing was put where it cannot be reached

    // Again: the same copy (not made anew) and the same data directory, with its password.
    const again = await start();
    try {
      expect(again.dataDir).toBe(server.dataDir);
      expect(new URL(again.url).password).toBe(new URL(server.url).password);
      expect(statSync(path.join(paths.binaries, copy ?? '', 'bin', 'initdb')).birthtimeMs).toBe(
        copied.birthtimeMs,
      );
    } finally {
      await again.stop();
    }
  }, 120_000);

  test('a copy another user could have changed is made again', async (context) => {
    if (!requireTool(ROOT, process.getuid?.() === 0)) return context.skip();
    const { privateDir, binaries } = await binariesInPrivateDirectory();
    const paths = await rootPaths();
    const server = await startOnFreePort({
      dataDir: path.join(privateDir, 'data'),
      binaries,
      rootPaths: paths,
      persistent: false,
    });
    await server.stop();
    const [copy] = await fs.readdir(paths.binaries);
    const initdb = path.join(paths.binaries, copy ?? '', 'bin', 'initdb');
    await fs.chown(initdb, 1000, 1000);
    const again = await startOnFreePort({
      dataDir: path.join(privateDir, 'data'),
      binaries,
      rootPaths: paths,
      persistent: false,
    });
    await again.stop();
    expect(statSync(initdb).uid).toBe(0);
  }, 120_000);
});

describe('as root, from an ordinary directory', () => {
  test("a data directory whose folders do not exist yet (the demo's ./.data/postgres) is made where the server's user can reach it", async (context) => {
    if (!requireTool(ROOT, process.getuid?.() === 0)) return context.skip();
    const work = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-work-'));
    cleanup.push(work);
    await fs.chmod(work, 0o755);
    const dataDir = path.join(work, '.data', 'postgres');
    const paths = await rootPaths();
    const server = await startOnFreePort({
      dataDir,
      binaries: await locateBinaries(),
      rootPaths: paths,
      persistent: false,
    });
    try {
      expect(server.dataDir).toBe(dataDir);
      expect(statSync(path.join(work, '.data')).mode & 0o777).toBe(0o755);
      expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    } finally {
      await server.stop();
    }
  }, 120_000);
});
