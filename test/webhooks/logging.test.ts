import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookServer } from '../../src/webhooks/server.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger, feedbackBody, listen, OTHER_TOKEN, receiver, TOKEN } from './webhook-helpers.js';

/** Sends raw bytes and waits for the server to close or answer. */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString();
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', () => resolve(answer));
    socket.setTimeout(2000, () => socket.destroy());
  });
}

describe('the token never reaches a log line', () => {
  let t: TestDatabase;
  let app: WebhookServer;
  let base: string;
  const logs = capturingLogger();

  beforeAll(async () => {
    t = await createTestDatabase();
    app = receiver(t.pool, { logger: logs.logger });
    base = await listen(app);
  });
  afterAll(async () => {
    await app.close();
    await t.drop();
  });

  it('whatever the request: accepted, refused, malformed, misrouted, or not even HTTP', async () => {
    const post = (path: string, body: string, type = 'application/json') =>
      fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
    const valid = JSON.stringify(feedbackBody());
    const statuses = [
      (await post(`/webhooks/main/${TOKEN}`, valid)).status,
      (await post(`/webhooks/main/${TOKEN}?token=${TOKEN}`, valid)).status,
      (await post(`/webhooks/main/${TOKEN}`, '{"type":')).status,
      (await post(`/webhooks/main/${TOKEN}`, JSON.stringify({ type: 'refund' }))).status,
      (await post(`/webhooks/main/${TOKEN}`, valid, 'text/plain')).status,
      (await post(`/webhooks/main/${TOKEN}`, JSON.stringify({ c: 'x'.repeat(20_000) }))).status,
      (await post(`/webhooks/main/${OTHER_TOKEN}`, valid)).status,
      (await post(`/webhooks/shop/${TOKEN}`, valid)).status,
      // The token in the wrong place: as the source, or under another path.
      (await post(`/webhooks/${TOKEN}`, valid)).status,
      (await post(`/webhooks/${TOKEN}/${TOKEN}`, valid)).status,
      (await post(`/${TOKEN}`, valid)).status,
      (await post(`/hooks/main/${TOKEN}`, valid)).status,
      (await fetch(`${base}/webhooks/main/${TOKEN}`)).status,
    ];
    // A wrong token, for a source with an allow-list too, is 404 like an unknown source.
    expect(statuses).toEqual([200, 200, 400, 422, 415, 413, 404, 404, 404, 404, 404, 404, 404]);
    // Not HTTP at all, with the token in the request line.
    const port = Number(new URL(base).port);
    expect(
      await rawRequest(
        port,
        `POST /webhooks/main/${TOKEN} HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n`,
      ),
    ).toMatch(/400/);
    expect(await rawRequest(port, `GARBAGE /webhooks/main/${TOKEN} \u0000\r\n\r\n`)).toMatch(/400|^$/);

    const text = logs.lines();
    expect(text.split('\n').length).toBeGreaterThan(statuses.length);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(OTHER_TOKEN);
    expect(text).not.toContain('CANARY');
    // The lines still say what happened, with the token masked.
    expect(text).toContain('"url":"/webhooks/main/***"');
    expect(text).toContain('"status":404');
  });
});
