import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, stopStaleServer } from '../../src/db/embedded.js';

/**
 * The PostgreSQL server a test run uses, first found wins:
 * 1. TEST_DATABASE_URL (CI, or a developer's own server);
 * 2. a throwaway container, when a Docker engine answers;
 * 3. an embedded PostgreSQL started by the run itself, so `npm test` needs nothing installed.
 */
export interface DatabaseServer {
  kind: 'TEST_DATABASE_URL' | 'container' | 'embedded';
  /** A superuser (or CREATEDB) connection string to an existing database on the server. */
  adminUrl: string;
  stop(): Promise<void>;
}

const CONTAINER_IMAGE = 'postgres:17-alpine';
/** Docker answers /_ping in milliseconds; a missing or dead engine must not delay the run. */
const DOCKER_PING_TIMEOUT_MS = 1_000;
const EMBEDDED_DIR_PREFIX = 'insights-sync-test-pg-';

export async function startDatabaseServer(): Promise<DatabaseServer> {
  const fromEnv = process.env.TEST_DATABASE_URL;
  if (fromEnv) return { kind: 'TEST_DATABASE_URL', adminUrl: fromEnv, stop: async () => {} };

  if (await dockerAnswers()) {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer(CONTAINER_IMAGE).start();
    return {
      kind: 'container',
      adminUrl: container.getConnectionUri(),
      stop: async () => {
        await container.stop();
      },
    };
  }

  await removeStaleEmbeddedDirs();
  const dataDir = path.join(os.tmpdir(), `${EMBEDDED_DIR_PREFIX}${process.pid}-${Date.now()}`);
  // The free port is only known free a moment ago; another process may take it first.
  for (let attempt = 1; ; attempt++) {
    try {
      const server = await startEmbeddedPostgres({ dataDir, port: await freePort(), persistent: false });
      return { kind: 'embedded', adminUrl: server.url, stop: server.stop };
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('Address already in use')) throw error;
    }
  }
}

/** Whether a Docker engine answers on DOCKER_HOST or a usual socket (testcontainers finds the same). */
async function dockerAnswers(): Promise<boolean> {
  const candidates: http.RequestOptions[] = [];
  const dockerHost = process.env.DOCKER_HOST;
  if (dockerHost?.startsWith('unix://')) candidates.push({ socketPath: dockerHost.slice('unix://'.length) });
  else if (dockerHost?.startsWith('tcp://')) {
    const url = new URL(dockerHost);
    candidates.push({ host: url.hostname, port: Number(url.port || 2375) });
  }
  for (const socketPath of [
    '/var/run/docker.sock',
    path.join(os.homedir(), '.docker', 'run', 'docker.sock'),
    ...(process.env.XDG_RUNTIME_DIR ? [path.join(process.env.XDG_RUNTIME_DIR, 'docker.sock')] : []),
  ]) {
    candidates.push({ socketPath });
  }
  for (const target of candidates) {
    if (target.socketPath && !(await fs.stat(target.socketPath).catch(() => undefined))) continue;
    if (await ping(target)) return true;
  }
  return false;
}

function ping(target: http.RequestOptions): Promise<boolean> {
  return new Promise((resolve) => {
    const request = http.get({ ...target, path: '/_ping', timeout: DOCKER_PING_TIMEOUT_MS }, (response) => {
      response.resume();
      resolve(response.statusCode === 200);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not find a free port'));
      });
    });
  });
}

/**
 * Data directories of earlier runs that were killed before their teardown (each is ~40 MB, and its
 * server may still be running): the pid in the name tells whether the run is still alive.
 */
async function removeStaleEmbeddedDirs(): Promise<void> {
  const entries = await fs.readdir(os.tmpdir()).catch(() => []);
  for (const entry of entries) {
    if (!entry.startsWith(EMBEDDED_DIR_PREFIX)) continue;
    const pid = Number.parseInt(entry.slice(EMBEDDED_DIR_PREFIX.length), 10);
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    const dataDir = path.join(os.tmpdir(), entry);
    try {
      await stopStaleServer(dataDir);
      await fs.rm(dataDir, { recursive: true, force: true });
    } catch {
      // Someone else's directory or still in use: leave it.
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
