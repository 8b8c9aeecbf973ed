import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withClient } from '../../scripts/dev-database/admin.js';
import { searchPath } from '../../src/db/bookkeeping.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { count, feedbackBody, listen, MAIN_URL, receiver } from './webhook-helpers.js';

function connectable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

describe('graceful shutdown', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t.drop();
  });

  it('stops accepting at once, lets the delivery in flight commit and answer 200, then closes', async () => {
    const app = receiver(t.pool);
    const base = await listen(app);
    const port = Number(new URL(base).port);

    await withClient(t.url, async (blocker) => {
      // Hold the delivery inside its transaction: its insert waits for this lock.
      await blocker.query(`set search_path = ${searchPath(t.schema)}`);
      await blocker.query('begin');
      await blocker.query('lock table webhook_events in exclusive mode');
      const inFlight = fetch(`${base}${MAIN_URL}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(feedbackBody()),
      });
      await expect
        .poll(async () => {
          const waiting = await blocker.query<{ n: number }>(
            `select count(*)::int as n from pg_locks where not granted and relation = 'webhook_events'::regclass
           and database = (select oid from pg_database where datname = current_database())`,
          );
          return waiting.rows[0]?.n;
        })
        .toBe(1);

      let closed = false;
      const closing = app.close().then(() => {
        closed = true;
      });
      await expect.poll(() => connectable(port)).toBe(false);
      expect(closed).toBe(false);
      expect(await count(t, 'webhook_events')).toBe(0);

      await blocker.query('commit');
      const response = await inFlight;
      expect(response.status).toBe(200);
      await closing;
      expect(closed).toBe(true);
    });
    expect(await count(t, 'webhook_events')).toBe(1);
    expect(await count(t, 'feedback')).toBe(1);
  });
});
