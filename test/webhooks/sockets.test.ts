import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { MAX_REQUESTS_PER_SOCKET } from '../../src/webhooks/http-server.js';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackBody, listen, MAIN_URL, OTHER_TOKEN, receiver } from './webhook-helpers.js';

/**
 * What the receiver's listener answers, and to whom: a socket that has served its share, one
 * client holding many sockets, paths that are not deliveries.
 */

/** Opens a socket from `localAddress` and resolves once connected (or once the server closed it). */
function connect(port: number, localAddress: string): Promise<{ socket: net.Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1', localAddress });
    const closed = new Promise<void>((done) => socket.once('close', () => done()));
    socket.once('error', () => {});
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('close', () => resolve({ socket, closed }));
    setTimeout(() => reject(new Error('no connection')), 10_000).unref();
  });
}

/** Status codes of every answer read from the socket until the server closes it. */
function answersUntilClosed(socket: net.Socket): Promise<{ statuses: number[]; text: string }> {
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
  });
  return new Promise((resolve) => {
    socket.once('close', () =>
      resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), text }),
    );
  });
}

describe('the receiver listener', () => {
  let t: TestDatabase;
  let app: WebhookServer;
  let base: string;
  let port: number;
  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool, { maxConnectionsPerAddress: 3 });
    base = await listen(app);
    port = Number(new URL(base).port);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  it(`a socket that has served ${MAX_REQUESTS_PER_SOCKET} requests is closed after its last answer; a client that keeps sending on it gets no 503`, async () => {
    const { socket } = await connect(port, '127.0.0.1');
    const answers = answersUntilClosed(socket);
    // Sent at once, as a client that ignores `Connection: close` keeps sending.
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(request.repeat(MAX_REQUESTS_PER_SOCKET + 20));
    const { statuses, text } = await answers;
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(statuses).toHaveLength(MAX_REQUESTS_PER_SOCKET);
    const last = text.slice(text.lastIndexOf('HTTP/1.1 '));
    expect(last.toLowerCase()).toContain('connection: close');
  });

  it(`deliveries past the ${MAX_REQUESTS_PER_SOCKET}th on one socket, sent by a client that ignores \`Connection: close\`: no 503, every answer a stored delivery`, async () => {
    const { socket } = await connect(port, '127.0.0.1');
    const answers = answersUntilClosed(socket);
    const sent = MAX_REQUESTS_PER_SOCKET + 20;
    const requests = Array.from({ length: sent }, (_, n) => {
      const body = JSON.stringify(feedbackBody({ id: 50_000 + n, comment: `delivery ${n}` }));
      return `POST ${MAIN_URL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    });
    // All written at once: the requests past the last answer are already on their way.
    socket.write(requests.join(''));
    const { statuses, text } = await answers;
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    expect(statuses).toHaveLength(MAX_REQUESTS_PER_SOCKET);
    const last = text.slice(text.lastIndexOf('HTTP/1.1 '));
    expect(last.toLowerCase()).toContain('connection: close');
    // Every answered delivery is stored; one sent after the last answer may be too (a later
    // redelivery of it is then a duplicate), never answered.
    const { rows } = await t.pool.query<{ n: number }>(
      "select count(*)::int as n from webhook_events where status = 'applied' and (body->>'id')::int >= 50000",
    );
    expect(rows[0]?.n).toBeGreaterThanOrEqual(MAX_REQUESTS_PER_SOCKET);
    expect(rows[0]?.n).toBeLessThanOrEqual(sent);
  });

  it('GET /metrics is not served on the webhook listener: the one 404 of an unknown path', async () => {
    const metrics = await fetch(`${base}/metrics`);
    const unknown = await fetch(`${base}/no-such-path`);
    expect(metrics.status).toBe(404);
    expect(await metrics.text()).toBe(await unknown.text());
  });

  it('a token too long for the router, or not valid percent-encoding: the one 404 of a wrong token, the path not echoed', async () => {
    const post = (token: string) =>
      fetch(`${base}/webhooks/main/${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(feedbackBody()),
      });
    const wrong = await post(OTHER_TOKEN);
    const wrongBody = await wrong.text();
    for (const token of [`CANARY${'a'.repeat(301)}`, `CANARY${'b'.repeat(5_000)}`, 'CANARY%zz']) {
      const response = await post(token);
      expect(response.status, token.slice(0, 12)).toBe(404);
      const body = await response.text();
      expect(body).toBe(wrongBody);
      expect(body).not.toContain('CANARY');
    }
  });

  it('the addresses of one /24 hold at most their share together (5 here, 2 per address): 127.0.0.2-4 get 5 sockets; 127.0.1.2, another /24, is served', async () => {
    const shared = receiver(t.pool, { maxConnectionsPerAddress: 2, maxConnectionsPerSubnet: 5 });
    const sharedPort = Number(new URL(await listen(shared)).port);
    const held: net.Socket[] = [];
    onTestFinished(async () => {
      for (const socket of held) socket.destroy();
      await shared.close();
    });
    const served = async (localAddress: string) => {
      const { socket } = await connect(sharedPort, localAddress);
      held.push(socket);
      const answers = answersUntilClosed(socket);
      socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      return (await answers).statuses;
    };
    // Held open, in turn, so the server has counted each before the next arrives.
    for (const localAddress of ['127.0.0.2', '127.0.0.2', '127.0.0.3', '127.0.0.3', '127.0.0.4']) {
      const { socket } = await connect(sharedPort, localAddress);
      held.push(socket);
      const count = held.length;
      await expect.poll(() => new Promise((r) => shared.server.getConnections((_e, n) => r(n)))).toBe(count);
    }
    // 127.0.0.4 holds one socket, below its address's share: refused by its network's.
    expect(await served('127.0.0.4')).toEqual([]);
    expect(await served('127.0.0.5')).toEqual([]);
    expect(await served('127.0.1.2')).toEqual([200]);
  });

  it('one address holds at most its share of sockets (3 here): one more is closed as accepted; another address is served', async () => {
    const held = await Promise.all([1, 2, 3].map(() => connect(port, '127.0.0.1')));
    onTestFinished(() => {
      for (const { socket } of held) socket.destroy();
    });
    // The server has counted all three before the fourth arrives.
    await expect.poll(() => new Promise((r) => app.server.getConnections((_e, n) => r(n)))).toBe(3);
    const extra = await connect(port, '127.0.0.1');
    const answers = answersUntilClosed(extra.socket);
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect((await answers).statuses).toEqual([]);
    const other = await connect(port, '127.0.0.2');
    const otherAnswers = answersUntilClosed(other.socket);
    other.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect((await otherAnswers).statuses).toEqual([200]);
  });
});
