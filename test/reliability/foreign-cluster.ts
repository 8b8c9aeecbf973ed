import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../helpers/free-port.js';

/**
 * A PostgreSQL cluster insights-sync did not create, started with the machine's own binaries: the
 * database an `--embedded` command must never stop. As root, initdb and the server run as the
 * `postgres` user, as a packaged PostgreSQL does.
 */

const BIN = '/usr/lib/postgresql/15/bin';

export interface ForeignCluster {
  dataDir: string;
  port: number;
  /** The postmaster's pid, from postmaster.pid. */
  pid: number;
  stop(): void;
}

function postgresIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number.parseInt(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout, 10);
  return { uid: id('-u'), gid: id('-g') };
}

function run(command: string, args: string[]): void {
  const ids = postgresIds();
  const result = spawnSync(path.join(BIN, command), args, { encoding: 'utf8', ...(ids ?? {}) });
  if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr}`);
}

export async function startForeignCluster(): Promise<ForeignCluster> {
  const parent = mkdtempSync(path.join(os.tmpdir(), 'insights-sync-foreign-'));
  const dataDir = path.join(parent, 'data');
  const ids = postgresIds();
  if (ids !== undefined) chownSync(parent, ids.uid, ids.gid);
  run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync']);
  const port = await freePort();
  run('pg_ctl', [
    '-D',
    dataDir,
    '-l',
    path.join(parent, 'log'),
    '-w',
    '-o',
    `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories= -c fsync=off`,
    'start',
  ]);
  const pid = Number.parseInt(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8'), 10);
  return {
    dataDir,
    port,
    pid,
    stop() {
      try {
        run('pg_ctl', ['-D', dataDir, '-m', 'immediate', 'stop']);
      } catch {
        // already stopped
      }
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
