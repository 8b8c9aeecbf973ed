import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  capturingLogger,
  count,
  feedbackBody,
  listen,
  MAIN_URL,
  OTHER_TOKEN,
  post,
  postJson,
  receiver,
  whileLocked,
} from './webhook-helpers.js';

/**
 * The receiver holds a bounded queue while PostgreSQL is slow,
 * closes slow and refused sockets without reading their bodies, and logs refusals as counts.
 */

interface RawOutcome {
  /** What the server answered, as text. */
  answer: string;
  /** Milliseconds from connect to the socket's close. */
  closedAfterMs: number;
  /** Bytes the client handed to the kernel before the socket closed (headers included). */
  bytesWritten: number;
}

/**
 * Opens a socket, sends `head`, then body bytes: `chunk` at a time every `everyMs` (0: as fast as
 * the socket takes them) until the server closes it or `giveUpMs` passes.
 */
function rawSend(
  port: number,
  head: string,
  chunk: Buffer,
  everyMs: number,
  giveUpMs: number,
): Promise<RawOutcome> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let open = true;
    let timer: NodeJS.Timeout | undefined;
    const pushBody = () => {
      if (!open) return;
      if (everyMs > 0) {
        socket.write(chunk);
        timer = setTimeout(pushBody, everyMs);
        return;
      }
      // As fast as the kernel takes it: write until the buffer is full, then wait for a drain.
      while (open && socket.write(chunk)) {}
      if (open) socket.once('drain', pushBody);
    };
    socket.on('connect', () => {
      socket.write(head);
      pushBody();
    });
    socket.on('data', (data) => {
      answer += data.toString();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      open = false;
      clearTimeout(timer);
      clearTimeout(giveUp);
      resolve({ answer, closedAfterMs: Date.now() - started, bytesWritten: socket.bytesWritten });
    });
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs);
  });
}

describe('a bounded delivery queue while the database is slow', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('a flood beyond the cap gets 503 at once; the queue never exceeds it; every 200 is stored once', async () => {
    const cap = 50;
    // Every sender of this test is on loopback: one address and one /24, beyond their default shares.
    const app = receiver(t.pool, {
      batching: { maxQueued: cap },
      persistTimeoutMs: 60_000,
      maxConnectionsPerAddress: 1_024,
      maxConnectionsPerSubnet: 1_024,
    });
    onTestFinished(() => app.close());
    const base = await listen(app);
    const ids = Array.from({ length: 400 }, (_, i) => 100_000 + i);
    const statuses = new Map<number, number>();
    let mostHeld = 0;
    const sampler = setInterval(() => {
      mostHeld = Math.max(mostHeld, app.deliveryStats().held);
    }, 1);
    onTestFinished(() => clearInterval(sampler));

    await whileLocked(t, async (waiting) => {
      const started = Date.now();
      const sent = ids.map((id) =>
        post(base, feedbackBody({ id })).then((status) => statuses.set(id, status)),
      );
      // The refused are answered while the lock is still held: they did not wait for it.
      await expect
        .poll(() => [...statuses.values()].filter((status) => status === 503).length, { timeout: 30_000 })
        .toBe(ids.length - cap);
      const refusedWithinMs = Date.now() - started;
      expect(await waiting()).toBeGreaterThan(0);
      expect(app.deliveryStats().held).toBe(cap);
      expect(statuses.size).toBe(ids.length - cap);
      console.info(`flood: ${ids.length - cap} refused within ${refusedWithinMs} ms, ${cap} held`);
      return sent;
    }).then((sent) => Promise.all(sent));

    clearInterval(sampler);
    expect(mostHeld).toBeLessThanOrEqual(cap);
    const answered = [...statuses.values()];
    expect(answered.filter((status) => status === 200)).toHaveLength(cap);
    expect(answered.filter((status) => status === 503)).toHaveLength(ids.length - cap);
    const acknowledged = ids.filter((id) => statuses.get(id) === 200);
    const stored = await t.db
      .selectFrom('feedback')
      .select('id')
      .where('id', '>=', 100_000)
      .orderBy('id')
      .execute();
    expect(stored.map((row) => row.id)).toEqual(acknowledged);
    const events = await t.db.selectFrom('webhook_events').select('delivery_count').execute();
    expect(events).toHaveLength(cap);
    expect(events.every((event) => event.delivery_count === 1)).toBe(true);
    expect(app.deliveryStats()).toEqual({ waiting: 0, held: 0, heldBytes: 0 });
  });

  it('the byte bound: bodies beyond it are refused at once, the bytes held never exceed it', async () => {
    const maxQueuedBytes = 20 * 1024;
    const app = receiver(t.pool, { batching: { maxQueuedBytes }, persistTimeoutMs: 60_000 });
    onTestFinished(() => app.close());
    const base = await listen(app);
    // About 4 KiB each: 5 fit.
    const bodies = Array.from({ length: 40 }, (_, i) =>
      feedbackBody({ id: 200_000 + i, comment: 'x'.repeat(4_000) }),
    );
    const size = Buffer.byteLength(JSON.stringify(bodies[0]));
    const fits = Math.floor(maxQueuedBytes / size);
    const statuses: number[] = [];
    await whileLocked(t, async () => {
      const sent = bodies.map((body) => post(base, body).then((status) => statuses.push(status)));
      await expect.poll(() => statuses.length, { timeout: 10_000 }).toBe(bodies.length - fits);
      expect(statuses.every((status) => status === 503)).toBe(true);
      expect(app.deliveryStats().heldBytes).toBeLessThanOrEqual(maxQueuedBytes);
      expect(app.deliveryStats().held).toBe(fits);
      return sent;
    }).then((sent) => Promise.all(sent));
    expect(statuses.filter((status) => status === 200)).toHaveLength(fits);
    expect(await t.db.selectFrom('feedback').select('id').where('id', '>=', 200_000).execute()).toHaveLength(
      fits,
    );
  });

  // The flood of 100 senders of 200 KB bodies: bounded-flood.trials.ts.
  it('a delivery that times out waiting is dropped from the queue, never applied later', async () => {
    // One transaction at a time: the first delivery holds it, the others wait in the queue.
    const app = receiver(t.pool, { persistTimeoutMs: 1_000, batching: { maxConcurrent: 1 } });
    onTestFinished(() => app.close());
    const base = await listen(app);
    const before = await count(t, 'webhook_events');
    const ids = Array.from({ length: 30 }, (_, i) => 300_000 + i);
    let inTransaction = 0;
    const statuses = await whileLocked(t, async (waiting) => {
      // One delivery first: its transaction waits for the lock; the others wait in the queue.
      const first = post(base, feedbackBody({ id: ids[0] }));
      await expect.poll(waiting).toBe(1);
      const rest = ids.slice(1).map((id) => post(base, feedbackBody({ id })));
      await expect.poll(() => app.deliveryStats().held).toBe(ids.length);
      const answered = await Promise.all([first, ...rest]);
      // Answered 503: those still waiting are gone from memory; the ones in a transaction stay held.
      expect(app.deliveryStats().waiting).toBe(0);
      inTransaction = app.deliveryStats().held;
      return answered;
    });
    expect(statuses.every((status) => status === 503)).toBe(true);
    expect(inTransaction).toBe(1);
    await expect.poll(() => app.deliveryStats().held).toBe(0);
    // Only what was already in a transaction committed (answered 503: the sender's retry is a duplicate).
    expect(await count(t, 'webhook_events')).toBe(before + inTransaction);
  });
});

describe('the persist timeout of deliveries waiting', () => {
  it('is one timer for all of them, not one each', async () => {
    const t = await createTestDatabase();
    onTestFinished(() => t.drop());
    const app = receiver(t.pool, { persistTimeoutMs: 60_000, batching: { maxConcurrent: 1 } });
    onTestFinished(() => app.close());
    const base = await listen(app);
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const ids = Array.from({ length: 40 }, (_, i) => 700_000 + i);
    const statuses = await whileLocked(t, async (waiting) => {
      const first = post(base, feedbackBody({ id: ids[0] }));
      await expect.poll(waiting).toBe(1);
      const before = timers();
      const rest = ids.slice(1).map((id) => post(base, feedbackBody({ id })));
      await expect.poll(() => app.deliveryStats().held).toBe(ids.length);
      // 39 more deliveries waiting; the HTTP client and server may each add a timer of their own.
      expect(timers() - before).toBeLessThan(5);
      return [first, ...rest];
    }).then((sent) => Promise.all(sent));
    expect(statuses.every((status) => status === 200)).toBe(true);
  });
});

describe('a delivery that timed out waiting', () => {
  it('is counted with the refusals: one warn line for the deliveries answered 503, whether they waited in the queue or in a transaction', async () => {
    const t = await createTestDatabase();
    onTestFinished(() => t.drop());
    const logs = capturingLogger();
    // One transaction at a time: the first delivery waits in it for the lock, the second in the queue.
    const app = receiver(t.pool, {
      persistTimeoutMs: 500,
      batching: { maxConcurrent: 1 },
      logger: logs.logger,
    });
    onTestFinished(() => app.close());
    const base = await listen(app);
    const statuses = await whileLocked(t, async (waiting) => {
      const first = post(base, feedbackBody({ id: 600_001 }));
      await expect.poll(waiting).toBe(1);
      const second = post(base, feedbackBody({ id: 600_002 }));
      return Promise.all([first, second]);
    });
    expect(statuses).toEqual([503, 503]);
    await app.close();
    const lines = logs
      .lines()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: number; msg: string; status?: number; url?: string });
    // A slow database answers every delivery 503: one line each filled the log (489 in 20 s).
    const aboutDeliveries = lines.filter((line) => line.level >= 40);
    expect(aboutDeliveries).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'requests refused',
        refused: { not_stored_in_time: 2 },
        total: 2,
      }),
    ]);
    // Each request's own line, token masked, at debug.
    const own = lines.filter((line) => line.msg === 'delivery not stored in time; answered 503');
    expect(own).toHaveLength(2);
    for (const line of own) expect(line).toMatchObject({ level: 20, status: 503, url: '/webhooks/main/***' });
  });
});

describe('sockets: request timeout and no body read after a refusal', () => {
  let t: TestDatabase;
  let app: WebhookServer;
  let port: number;
  /** Bytes the server read from each socket it accepted, once closed. */
  const bytesRead: number[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool, { requestTimeoutMs: 1_000 });
    app.server.on('connection', (socket: net.Socket) => {
      socket.on('close', () => bytesRead.push(socket.bytesRead));
    });
    port = Number(new URL(await listen(app)).port);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  const head = (path: string, length: number) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

  it('a slow body (1 byte per 100 ms) is cut at the request timeout with 408', async () => {
    const outcome = await rawSend(port, head(MAIN_URL, 10_000), Buffer.from(' '), 100, 10_000);
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 408/);
    console.info(`slow body: closed after ${outcome.closedAfterMs} ms`);
    // requestTimeoutMs 1000, checked every second.
    expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(900);
    expect(outcome.closedAfterMs).toBeLessThan(3_500);
  });

  it('a wrong token declaring 10 GB and sending 1 byte per 100 ms: 404 and closed at once', async () => {
    const outcome = await rawSend(
      port,
      head(`/webhooks/main/${OTHER_TOKEN}`, 10 * 1024 ** 3),
      Buffer.from(' '),
      100,
      10_000,
    );
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 404/);
    expect(outcome.closedAfterMs).toBeLessThan(1_000);
  });

  it('a huge declared length with the right token: 413 and closed, the body not read', async () => {
    const outcome = await rawSend(
      port,
      head(MAIN_URL, 10 * 1024 ** 3),
      Buffer.alloc(64 * 1024, 32),
      0,
      10_000,
    );
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 413/);
    expect(outcome.answer.toLowerCase()).toContain('connection: close');
    expect(outcome.closedAfterMs).toBeLessThan(2_000);
    console.info(`413: the client pushed ${outcome.bytesWritten} bytes before the close`);
  });

  it('a wrong token with a large body: 404, the socket closed, the body not read', async () => {
    const declared = 1024 ** 3;
    bytesRead.length = 0;
    const outcome = await rawSend(
      port,
      head(`/webhooks/main/${OTHER_TOKEN}`, declared),
      Buffer.alloc(64 * 1024, 32),
      0,
      10_000,
    );
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 404/);
    expect(outcome.answer.toLowerCase()).toContain('connection: close');
    expect(outcome.closedAfterMs).toBeLessThan(2_000);
    await expect.poll(() => bytesRead.length).toBe(1);
    const read = bytesRead[0] ?? Number.POSITIVE_INFINITY;
    console.info(
      `404: the client pushed ${outcome.bytesWritten} bytes, the server read ${read} of ${declared} declared`,
    );
    // Whatever was in flight when the answer went out; nowhere near the declared gigabyte.
    expect(outcome.bytesWritten).toBeLessThan(16 * 1024 ** 2);
    expect(read).toBeLessThan(4 * 1024 ** 2);
  });

  it('a token too long for the router, or not valid percent-encoding, with a large body: the answer of a wrong token, closed, the body not read', async () => {
    const declared = 1024 ** 3;
    /** The answer's status line and headers, the date aside (it changes every second). */
    const headers = (answer: string) =>
      (answer.split('\r\n\r\n')[0] ?? '')
        .split('\r\n')
        .filter((line) => !line.toLowerCase().startsWith('date:'));
    const send = async (token: string) => {
      bytesRead.length = 0;
      const outcome = await rawSend(
        port,
        head(`/webhooks/main/${token}`, declared),
        Buffer.alloc(64 * 1024, 32),
        0,
        10_000,
      );
      await expect.poll(() => bytesRead.length).toBe(1);
      return { ...outcome, read: bytesRead[0] ?? Number.POSITIVE_INFINITY };
    };
    const wrong = await send(OTHER_TOKEN);
    for (const token of [`${'a'.repeat(301)}`, `${'b'.repeat(5_000)}`, '%zz', 'a%E0%A4%A']) {
      const outcome = await send(token);
      expect(headers(outcome.answer), token.slice(0, 12)).toEqual(headers(wrong.answer));
      expect(outcome.answer.split('\r\n\r\n')[1]).toBe(wrong.answer.split('\r\n\r\n')[1]);
      expect(outcome.answer.toLowerCase()).toContain('connection: close');
      expect(outcome.closedAfterMs, token.slice(0, 12)).toBeLessThan(2_000);
      expect(outcome.read, token.slice(0, 12)).toBeLessThan(4 * 1024 ** 2);
    }
  });

  it('the right token, JSON in latin1 with a large body: 415, the socket closed, the body not read', async () => {
    const declared = 1024 ** 3;
    bytesRead.length = 0;
    const latin1 = head(MAIN_URL, declared).replace(
      'Content-Type: application/json',
      'Content-Type: application/json; charset=latin1',
    );
    const outcome = await rawSend(port, latin1, Buffer.alloc(64 * 1024, 32), 0, 10_000);
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 415/);
    expect(outcome.answer.toLowerCase()).toContain('connection: close');
    expect(outcome.closedAfterMs).toBeLessThan(2_000);
    await expect.poll(() => bytesRead.length).toBe(1);
    expect(bytesRead[0] ?? Number.POSITIVE_INFINITY).toBeLessThan(4 * 1024 ** 2);
  });

  it("the node server's limits: 1,024 connections, 5 s keep-alive (1,000 requests per socket: test/webhooks/sockets.test.ts)", () => {
    expect(app.server.maxConnections).toBe(1_024);
    expect(app.server.requestTimeout).toBe(1_000);
    expect(app.server.keepAliveTimeout).toBe(5_000);
  });
});

describe('refused requests are logged as counts', () => {
  it('1,000 wrong-token or unknown-source requests make at most a few warn lines', async () => {
    const t = await createTestDatabase();
    onTestFinished(() => t.drop());
    const logs = capturingLogger();
    const app = receiver(t.pool, { logger: logs.logger });
    const body = feedbackBody();
    for (let i = 0; i < 1_000; i += 1) {
      const url = i % 4 === 0 ? `/webhooks/nosuch/${OTHER_TOKEN}` : `/webhooks/main/${OTHER_TOKEN}`;
      const response = await postJson(app, url, body);
      // An unknown source and a wrong token get the same answer.
      expect(response.statusCode).toBe(404);
    }
    await app.close();
    const warnings = logs
      .lines()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: number; msg: string; refused?: Record<string, number> })
      .filter((line) => line.level >= 40);
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(3);
    let refused = 0;
    for (const line of warnings) {
      expect(line.msg).toBe('requests refused');
      expect(Object.keys(line.refused ?? {})).toEqual(['404']);
      refused += line.refused?.['404'] ?? 0;
    }
    expect(refused).toBe(1_000);
    expect(logs.lines()).not.toContain(OTHER_TOKEN);
  });
});
