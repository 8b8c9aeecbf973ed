import {
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopStaleServer } from '../../src/db/embedded.js';
import { createLogger } from '../../src/log/logger.js';
import { cliEnv, runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/free-port.js';
import { feedbackBody, listen, MAIN_URL, receiver, TOKEN } from '../webhooks/webhook-helpers.js';
import { type ForeignCluster, startForeignCluster } from './foreign-cluster.js';

/**
 * The security suite of the tool's surface (docs/security.md names each row's proof):
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

/** What a terminal would act on: every C0 control but newline, DEL, C1, and the bidi overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const TERMINAL_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('security: text from the database never drives the terminal', () => {
  // Clears the screen, homes the cursor, prints a forged line; then a carriage return and a C1 CSI.
  const EVIL = 'shop\u001b[2J\u001b[Hforged: every source ok\nforged line\r\u009b31m\u202e';
  let t: TestDatabase;
  let env: Record<string, string>;
  let dir: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema });
    dir = mkdtempSync(path.join(os.tmpdir(), 'insights-sync-terminal-'));
    await t.db.insertInto('sources').values({ source_id: EVIL, base_url: 'http://insights.test' }).execute();
    await t.db
      .insertInto('sync_windows')
      .values({
        source_id: EVIL,
        resource: 'feedback',
        day: '2026-01-02',
        status: 'failed',
        attempts: 1,
        last_error: `HTTP 500 ${EVIL}`,
      })
      .execute();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.drop();
  });

  const COMMANDS: readonly (readonly string[])[] = [
    ['status'],
    ['status', '--details'],
    ['status', '--source', 'nowhere'],
    ['report', '--source', 'nowhere', '--out', 'REPORT'],
    ['report', '--source', EVIL, '--out', 'REPORT'],
  ];

  it(`a source name and an error text with ESC, CR, C1 and bidi controls: ${COMMANDS.length} commands print no control character and no forged line`, async () => {
    const results = await Promise.all(
      COMMANDS.map((command) =>
        runCli(
          command.map((arg) => (arg === 'REPORT' ? path.join(dir, 'report.html') : arg)),
          env,
        ),
      ),
    );
    for (const [i, result] of results.entries()) {
      const shown = `${COMMANDS[i]?.join(' ')}: exit ${result.code}`;
      expect(result.stdout, shown).not.toMatch(TERMINAL_CONTROL);
      expect(result.stderr, shown).not.toMatch(TERMINAL_CONTROL);
      expect(`${result.stdout}${result.stderr}`, shown).not.toMatch(/^forged/m);
      // Each but the last (a report written, no name printed) shows the name, escaped.
      if (i < COMMANDS.length - 1)
        expect(`${result.stdout}${result.stderr}`, shown).toContain('shop\\u001b[2J');
    }
  }, 180_000);

  it('a log line drawn for a terminal (LOG_FORMAT=pretty) shows the same text escaped', () => {
    let written = '';
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        written += chunk.toString();
        callback();
      },
    });
    const logger = createLogger({ pretty: true, destination, level: 'info' });
    logger.warn({ source: EVIL, err: new Error(`failed: ${EVIL}`) }, `window of ${EVIL} failed`);
    expect(written).toContain('shop\\u001b[2J');
    expect(written).not.toMatch(TERMINAL_CONTROL);
    expect(written).not.toMatch(/^forged/m);
  });
});

describe('security: files the tool writes are never written through a symlink', () => {
  let t: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'insights-sync-symlink-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.drop();
  });

  it('report --out and dbt-sources --out at a planted link: the link is replaced, its target untouched; the report is 0600', async () => {
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_SCHEMA: t.schema });
    const commands = [
      { args: ['report'], file: 'report.html', mode: 0o600 },
      { args: ['dbt-sources'], file: 'sources.yml', mode: 0o644 },
    ];
    const results = await Promise.all(
      commands.map(({ args, file }) => {
        const victim = path.join(dir, `victim-of-${file}`);
        writeFileSync(victim, 'precious\n', { mode: 0o644 });
        symlinkSync(victim, path.join(dir, file));
        return runCli([...args, '--out', path.join(dir, file)], env);
      }),
    );
    for (const [i, { file, mode }] of commands.entries()) {
      expect(results[i]?.code, results[i]?.stderr).toBe(0);
      expect(readFileSync(path.join(dir, `victim-of-${file}`), 'utf8'), file).toBe('precious\n');
      const written = lstatSync(path.join(dir, file));
      expect(written.isFile(), file).toBe(true);
      expect(written.mode & 0o777, file).toBe(mode);
    }
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  }, 180_000);
});

/** One delivery from `localAddress` on a connection of its own; its status, or 0 without an answer. */
function deliverFrom(base: string, localAddress: string, id: number): Promise<number> {
  const body = JSON.stringify(feedbackBody({ id }));
  return new Promise((resolve) => {
    const request = http.request(
      `${base}${MAIN_URL}`,
      {
        method: 'POST',
        localAddress,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: 20_000,
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(0));
    request.end(body);
  });
}

describe('security: one client cannot starve the others of the receiver', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('one client holding 2,000 sockets (each re-opened once closed): every one of 77 deliveries of a second client is answered 200', async () => {
    const app = receiver(t.pool);
    const base = await listen(app);
    const port = Number(new URL(base).port);
    const greedy = new Set<net.Socket>();
    let holding = true;
    const hold = () => {
      if (!holding) return;
      const socket = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.1' });
      greedy.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        greedy.delete(socket);
        setTimeout(hold, 50).unref();
      });
    };
    try {
      for (let i = 0; i < 2_000; i += 1) hold();
      // The greedy client has taken what it can before the other one starts.
      await expect
        .poll(() => new Promise((r) => app.server.getConnections((_e, n) => r(n))), { timeout: 20_000 })
        .toBeGreaterThan(200);
      const statuses: number[] = [];
      for (let batch = 0; batch < 77; batch += 11) {
        const ids = Array.from({ length: Math.min(11, 77 - batch) }, (_, i) => 900_000 + batch + i);
        // From another /24: the greedy client's network holds its share, whatever its addresses.
        statuses.push(...(await Promise.all(ids.map((id) => deliverFrom(base, '127.0.1.2', id)))));
      }
      const answered = statuses.filter((status) => status === 200).length;
      expect(answered, `answers: ${statuses.join(',')}`).toBe(77);
    } finally {
      holding = false;
      for (const socket of greedy) socket.destroy();
      await app.close();
    }
  }, 180_000);

  it('serve with INSIGHTS_METRICS_PORT: /metrics on the webhook port is 404; the metrics server answers on 127.0.0.1 only', async () => {
    const [webhookPort, metricsPort] = [await freePort(), await freePort()];
    const cli = startCli(
      ['serve'],
      cliEnv({
        DATABASE_URL: t.url,
        INSIGHTS_SCHEMA: t.schema,
        INSIGHTS_WEBHOOK_TOKEN: TOKEN,
        INSIGHTS_SOURCE_NAME: 'main',
        INSIGHTS_WEBHOOK_PORT: String(webhookPort),
        INSIGHTS_METRICS_PORT: String(metricsPort),
      }),
    );
    try {
      await expect
        .poll(
          () =>
            fetch(`http://127.0.0.1:${metricsPort}/metrics`).then(
              (r) => r.status,
              () => 0,
            ),
          { timeout: 60_000, interval: 250 },
        )
        .toBe(200);
      expect((await fetch(`http://127.0.0.1:${webhookPort}/metrics`)).status).toBe(404);
      // Bound to loopback, not every interface: another local address of the machine is refused.
      await expect(fetch(`http://127.0.0.2:${metricsPort}/metrics`)).rejects.toThrow();
      expect((await fetch(`http://127.0.0.2:${webhookPort}/healthz`)).status).toBe(200);
    } finally {
      cli.child.kill('SIGTERM');
      await cli.done;
    }
  }, 120_000);
});
