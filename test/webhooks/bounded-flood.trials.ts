import { describe, expect, it, onTestFinished } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';
import { feedbackBody, listen, post, receiver, whileLocked } from './webhook-helpers.js';

/**
 * The receiver's byte bound under a flood: 100 senders of 200 KB bodies redelivering while the
 * table is locked. A trial of `npm run test:reliability`: it pushes about 400 MB/s through one
 * process, and beside other test files its redeliveries feed on each other (1,700 answers 503
 * alone, 7,700 beside two other files, 15 s against 110 s). The bounds of bounded.test.ts hold the
 * quick cases.
 */

// The drain after the lock can take longer than the default 30 s. A bound on memory, not on time.
const FLOOD_TIMEOUT_MS = 120_000;

describe('a bounded delivery queue while the database is slow', () => {
  it(
    '100 senders of 200 KB bodies redelivering for 5 s against the locked table: memory stays bounded',
    async () => {
      const t = await createTestDatabase();
      onTestFinished(() => t.drop());
      const maxQueuedBytes = 8 * 1024 * 1024;
      const app = receiver(t.pool, {
        bodyLimit: 256 * 1024,
        persistTimeoutMs: 1_000,
        batching: { maxQueuedBytes },
        maxConnectionsPerAddress: 1_024,
        maxConnectionsPerSubnet: 1_024,
      });
      onTestFinished(() => app.close());
      const base = await listen(app);
      const rssBefore = process.memoryUsage().rss;
      let rssMost = rssBefore;
      let heldBytesMost = 0;
      const sampler = setInterval(() => {
        rssMost = Math.max(rssMost, process.memoryUsage().rss);
        heldBytesMost = Math.max(heldBytesMost, app.deliveryStats().heldBytes);
      }, 5);
      onTestFinished(() => clearInterval(sampler));
      const answers = new Map<number, number>();
      const acknowledged = new Set<number>();
      let next = 400_000;
      const lockedUntil = Date.now() + 5_000;
      // Each sender delivers one body until it is acknowledged (a redelivery 50 ms after a 503),
      // then the next, as the service would; until the lock is gone and its last body is stored.
      const sender = async () => {
        while (Date.now() < lockedUntil) {
          const id = next++;
          const body = feedbackBody({ id, comment: 'x'.repeat(200_000) });
          for (;;) {
            const status = await post(base, body);
            answers.set(status, (answers.get(status) ?? 0) + 1);
            if (status === 200) break;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
          acknowledged.add(id);
        }
      };
      let senders: Promise<unknown> | undefined;
      await whileLocked(t, async () => {
        senders = Promise.all(Array.from({ length: 100 }, sender));
        await new Promise((resolve) => setTimeout(resolve, lockedUntil - Date.now()));
        expect(acknowledged.size).toBe(0);
      });
      await senders;
      clearInterval(sampler);
      console.info(
        `200 KB flood: answers ${JSON.stringify(Object.fromEntries(answers))}; held at most ` +
          `${(heldBytesMost / 2 ** 20).toFixed(1)} MiB; RSS ${(rssBefore / 2 ** 20).toFixed(0)} -> ` +
          `at most ${(rssMost / 2 ** 20).toFixed(0)} MiB (client and server in one process)`,
      );
      expect(heldBytesMost).toBeLessThanOrEqual(maxQueuedBytes);
      expect([...answers.keys()].sort()).toEqual([200, 503]);
      const stored = await t.db
        .selectFrom('feedback')
        .select('id')
        .where('id', '>=', 400_000)
        .orderBy('id')
        .execute();
      expect(stored.map((row) => row.id)).toEqual([...acknowledged].sort((a, b) => a - b));
      // Node's heap and the client's own bodies included: far from the 1.2 GB an unbounded queue once held.
      expect(rssMost - rssBefore).toBeLessThan(512 * 2 ** 20);
    },
    FLOOD_TIMEOUT_MS,
  );
});
