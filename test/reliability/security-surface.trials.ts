import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopStaleServer } from '../../src/db/embedded.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { type ForeignCluster, freePort, startForeignCluster } from './foreign-cluster.js';

/**
 * The security suite of issue 23, the tool's surface (docs/security.md names each row's proof):
 * what an `--embedded` command may stop, what the receiver's listener serves and to how many
 * sockets of one client, where files are written, and what reaches a terminal.
 */

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function answers(port: number): Promise<boolean> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe('security: the embedded database never stops a server it did not start', () => {
  let cluster: ForeignCluster;
  beforeAll(async () => {
    cluster = await startForeignCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());

  it('INSIGHTS_DATA_DIR at another running cluster: --embedded refuses in one line, exit 2; the server still runs and its directory is untouched', async () => {
    const before = readdirSync(cluster.dataDir).sort();
    const pidFile = readFileSync(path.join(cluster.dataDir, 'postmaster.pid'), 'utf8');
    const result = await runCli(
      ['migrate', '--embedded'],
      cliEnv({ INSIGHTS_DATA_DIR: cluster.dataDir, INSIGHTS_EMBEDDED_PORT: String(await freePort()) }),
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('insights-sync did not initialise');
    expect(isAlive(cluster.pid)).toBe(true);
    expect(await answers(cluster.port)).toBe(true);
    expect(readdirSync(cluster.dataDir).sort()).toEqual(before);
    expect(readFileSync(path.join(cluster.dataDir, 'postmaster.pid'), 'utf8')).toBe(pidFile);
  }, 60_000);

  it('called directly on that directory, stopStaleServer refuses too and signals nothing', async () => {
    await expect(stopStaleServer(cluster.dataDir)).rejects.toThrow(/did not initialise/);
    expect(isAlive(cluster.pid)).toBe(true);
    expect(await answers(cluster.port)).toBe(true);
  });
});
