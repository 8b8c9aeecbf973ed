import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { EmbeddedPostgresError, type PostgresBinaries } from './embedded-binaries.js';
import { type PostgresUser, safeRootDirectory } from './embedded-root.js';

/**
 * The binaries where the postgres user can run them (see embedded-root.ts): in place if it can,
 * else a copy under a root-only base. The copy is named by the package's version and a
 * fingerprint of its files (path, kind, size, executable bit, link target): another version or
 * build gets a copy of its own. Before reuse, every file of a copy is checked against that list
 * and must be owned by root and writable by root alone: a copy that lost a file (a cleaner, a
 * crash mid-copy) or that someone else could have changed is made again.
 */

/** One entry of a directory tree, as the fingerprint and the check see it. */
export interface TreeEntry {
  /** Path relative to the tree's root, with '/'. */
  path: string;
  kind: 'directory' | 'file' | 'symlink';
  size: number;
  executable: boolean;
  /** A symlink's target, as written (the package's libraries link to siblings). */
  target?: string;
  uid: number;
  mode: number;
}

/** The text the fingerprint hashes: what a copy must hold, in a stable order. */
export function manifest(entries: readonly TreeEntry[]): string {
  return entries
    .map((entry) =>
      [
        entry.kind,
        entry.path,
        entry.kind === 'file' ? entry.size : 0,
        entry.executable ? 'x' : '-',
        entry.target ?? '',
      ].join('\t'),
    )
    .sort()
    .join('\n');
}

/** Why a copy may not be used as is (another's file, or not the source's content), else undefined. */
export function copyProblem(source: readonly TreeEntry[], copy: readonly TreeEntry[]): string | undefined {
  const foreign = copy.find(
    (entry) => entry.uid !== 0 || (entry.kind !== 'symlink' && (entry.mode & 0o022) !== 0),
  );
  if (foreign !== undefined) return `${foreign.path} is not owned by root and writable by root alone`;
  if (manifest(source) !== manifest(copy)) return 'its files differ from the package';
  return undefined;
}

export async function readTree(root: string): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  const names = await fs.readdir(root, { recursive: true });
  for (const name of names) {
    const full = path.join(root, name);
    const stat = await fs.lstat(full);
    const kind = stat.isSymbolicLink() ? 'symlink' : stat.isDirectory() ? 'directory' : 'file';
    entries.push({
      path: name.split(path.sep).join('/'),
      kind,
      size: stat.size,
      executable: kind === 'file' && (stat.mode & 0o100) !== 0,
      target: kind === 'symlink' ? await fs.readlink(full) : undefined,
      uid: stat.uid,
      mode: stat.mode,
    });
  }
  return entries;
}

/** Whether `user` can run `program` (which loads its libraries): the real test of reach. */
function runsAs(program: string, user: PostgresUser): boolean {
  return spawnSync(program, ['--version'], { uid: user.uid, gid: user.gid, stdio: 'ignore' }).status === 0;
}

export async function reachableBinaries(
  binaries: PostgresBinaries,
  user: PostgresUser,
  base: string,
): Promise<PostgresBinaries> {
  if (runsAs(binaries.initdb, user) && runsAs(binaries.postgres, user)) return binaries;
  const source = await readTree(binaries.nativeDir);
  const fingerprint = createHash('sha256').update(manifest(source)).digest('hex').slice(0, 16);
  const target = path.join(await safeRootDirectory(base), `postgres-${binaries.version}-${fingerprint}`);
  const existing = await readTree(target).catch(() => undefined);
  if (existing === undefined || copyProblem(source, existing) !== undefined) {
    await fs.rm(target, { recursive: true, force: true });
    await copyTree(binaries.nativeDir, target);
    const problem = copyProblem(source, await readTree(target));
    if (problem !== undefined)
      throw new EmbeddedPostgresError(`the copy of PostgreSQL in ${target}: ${problem}`);
  }
  const moved = {
    ...binaries,
    nativeDir: target,
    initdb: path.join(target, path.relative(binaries.nativeDir, binaries.initdb)),
    postgres: path.join(target, path.relative(binaries.nativeDir, binaries.postgres)),
  };
  if (!runsAs(moved.initdb, user))
    throw new EmbeddedPostgresError(`the postgres user cannot run ${moved.initdb}, even copied there`);
  return moved;
}

/**
 * Copies into a fresh private directory beside `target`, sets the modes (0755 for directories and
 * programs, 0644 for the rest), then renames it into place: a concurrent run sees no half copy,
 * and if one wins the race its copy is used.
 */
async function copyTree(from: string, target: string): Promise<void> {
  const staging = await fs.mkdtemp(path.join(path.dirname(target), '.copy-'));
  try {
    await fs.cp(from, staging, { recursive: true, verbatimSymlinks: true });
    for (const entry of await readTree(staging)) {
      if (entry.kind === 'symlink') continue;
      const mode = entry.kind === 'directory' || entry.executable ? 0o755 : 0o644;
      await fs.chmod(path.join(staging, entry.path), mode);
    }
    await fs.chmod(staging, 0o755);
    await fs.rename(staging, target).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  } finally {
    await fs.rm(staging, { recursive: true, force: true });
  }
}
