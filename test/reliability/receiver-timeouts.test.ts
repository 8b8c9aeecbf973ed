import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withClient } from '../../scripts/dev-database/admin.js';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { RECEIVER_TIMEOUTS } from '../../src/webhooks/receiver-timeouts.js';
import { cliEnv, listeningUrl, startCli } from '../helpers/cli.js';
import { feedbackBody, TOKEN } from '../webhooks/webhook-helpers.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from './warehouse-roles.js';

/**
 * The serve role may change its own defaults for good (ALTER ROLE ... SET lock_timeout = 0 needs
 * no privilege): the receiver's connections set their timeouts themselves, so a stolen password
 * lifts no bound on what the running receiver holds, or waits for.
 */

/** Longest a receiver's statement may be seen waiting for a lock: its lock_timeout, and slack. */
const LONGEST_WAIT_S = RECEIVER_TIMEOUTS.lockTimeoutMs / 1000 + 3;

describe("the receiver's timeouts are its own", () => {
  let roles: RolesDatabase;
  beforeAll(async () => {
    roles = await createRolesDatabase();
  });
  afterAll(() => roles?.drop());

  it("as the serve role, ALTER ROLE ... SET lock_timeout = 0 (and idle_in_transaction_session_timeout) persists; serve's statements still give up a lock wait after its own lock_timeout", async () => {
    const serveRole = roles.role.serve;
    await withClient(roles.url.serve, async (client) => {
      await client.query(`alter role ${serveRole} set lock_timeout = 0`);
      await client.query(`alter role ${serveRole} set idle_in_transaction_session_timeout = 0`);
    });
    // The change is the role's default from now on: a new session of it has no lock_timeout.
    const plain = await withClient(roles.url.serve, (client) =>
      client.query(`select current_setting('lock_timeout') as v`),
    );
    expect(plain.rows[0]?.v).toBe('0');

    const { child, done } = startCli(
      ['serve'],
      cliEnv({
        DATABASE_URL: roles.url.serve,
        INSIGHTS_SCHEMA: SCHEMA,
        INSIGHTS_API_URL: 'http://api.example.test',
        INSIGHTS_API_KEY: 'key',
        INSIGHTS_SOURCE_NAME: 'main',
        INSIGHTS_WEBHOOK_TOKEN: TOKEN,
        INSIGHTS_WEBHOOK_PORT: '0',
        INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      }),
    );
    try {
      const base = await listeningUrl(child);
      const longest = await withClient(roles.adminUrl, async (admin) => {
        // What every delivery writes first, locked by another session for the whole test.
        await admin.query('begin');
        await admin.query(`lock table ${bookkeepingSchema(SCHEMA)}.webhook_events in access exclusive mode`);
        void fetch(`${base}/webhooks/main/${TOKEN}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(feedbackBody()),
        }).catch(() => {});
        // The receiver's longest lock wait seen, over longer than its lock_timeout.
        let seen = 0;
        const until = Date.now() + (LONGEST_WAIT_S + 5) * 1000;
        while (Date.now() < until) {
          const { rows } = await admin.query<{ waited: number }>(
            `select coalesce(max(extract(epoch from clock_timestamp() - l.waitstart)), 0)::float8 as waited
               from pg_locks l join pg_stat_activity a using (pid)
              where not l.granted and a.usename = $1`,
            [serveRole],
          );
          seen = Math.max(seen, rows[0]?.waited ?? 0);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        await admin.query('rollback');
        return seen;
      });
      // It did wait (the lock was in its way), and gave up within its own lock_timeout.
      expect(longest).toBeGreaterThan(1);
      expect(longest).toBeLessThan(LONGEST_WAIT_S);
    } finally {
      child.kill('SIGTERM');
      await done;
    }
  }, 60_000);
});
