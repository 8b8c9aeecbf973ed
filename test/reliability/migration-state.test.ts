import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withClient } from '../../scripts/dev-database/admin.js';
import { bookkeepingSchema, queueSchema } from '../../src/db/bookkeeping.js';
import { LATEST_MIGRATION } from '../../src/db/migrator.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, listeningUrl, runCli, startCli } from '../helpers/cli.js';
import { feedbackBody, TOKEN } from '../webhooks/webhook-helpers.js';
import {
  createRolesDatabase,
  migrateAsOwner,
  type RoleName,
  type RolesDatabase,
  SCHEMA,
} from './warehouse-roles.js';

/**
 * Only the owner writes migration state (Kysely's tables, pg-boss's `version`): a runtime role
 * that edited it would make the owner's next migrate run a migration again, replay pg-boss's DDL
 * or skip an upgrade. A runtime role that finds the warehouse behind or ahead of its version says
 * so in one line, exit 2, and changes nothing.
 */

const BOOKKEEPING = bookkeepingSchema(SCHEMA);
const QUEUE = queueSchema(SCHEMA);

/** Runs `statement` as `role` in a transaction rolled back afterwards: 'ok', or PostgreSQL's refusal. */
async function attempt(roles: RolesDatabase, role: RoleName, statement: string): Promise<string> {
  const client = new pg.Client({ connectionString: roles.url[role] });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query('begin');
    await client.query(statement);
    return 'ok';
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.query('rollback').catch(() => {});
    await client.end();
  }
}

/**
 * `serve` with `env`: once it listens, one delivery is posted, then it is stopped (SIGTERM). The
 * delivery's status, and how serve ended.
 */
async function serveOnce(
  env: Record<string, string>,
): Promise<{ status: number; code: number | null; stderr: string }> {
  const { child, done } = startCli(['serve'], env);
  const base = await listeningUrl(child);
  const response = await fetch(`${base}/webhooks/main/${TOKEN}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(feedbackBody()),
  });
  child.kill('SIGTERM');
  const result = await done;
  return { status: response.status, code: result.code, stderr: result.stderr };
}

const WRITES: readonly string[] = [
  `delete from ${BOOKKEEPING}.kysely_migration`,
  `delete from ${BOOKKEEPING}.kysely_migration where name = (select max(name) from ${BOOKKEEPING}.kysely_migration)`,
  `insert into ${BOOKKEEPING}.kysely_migration (name, timestamp) values ('9999-planted', 'now')`,
  `update ${BOOKKEEPING}.kysely_migration_lock set is_locked = 1`,
  `truncate ${BOOKKEEPING}.kysely_migration`,
  `update ${QUEUE}.version set version = 20`,
  `update ${QUEUE}.version set version = 999`,
  `delete from ${QUEUE}.version`,
];

describe('migration state: the owner writes it, the runtime roles read it', () => {
  let roles: RolesDatabase;
  let sim: Simulator;
  let env: (role: RoleName) => Record<string, string>;
  const today = todayUtc(new Date());

  beforeAll(async () => {
    roles = await createRolesDatabase({ migrate: false });
    sim = await startSimulator({ seed: 11, from: addDays(today, -2), to: today, cap: 4000 });
    env = (role) =>
      cliEnv({
        DATABASE_URL: roles.url[role],
        INSIGHTS_SCHEMA: SCHEMA,
        INSIGHTS_API_URL: sim.url,
        INSIGHTS_API_KEY: sim.apiKey,
        INSIGHTS_SOURCE_NAME: 'main',
        INSIGHTS_MAX_HEAP_MB: '0',
        INSIGHTS_WEBHOOK_TOKEN: TOKEN,
        INSIGHTS_WEBHOOK_PORT: '0',
        INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      });
  });
  afterAll(async () => {
    await sim?.stop();
    await roles?.drop();
  });

  it('before the first migrate: sync, backfill, serve and webhooks replay as their runtime role each say so in one line, exit 2, and create nothing', async () => {
    const runs = [
      { role: 'sync' as const, args: ['sync'] },
      { role: 'sync' as const, args: ['backfill', '--from', addDays(today, -1), '--to', addDays(today, -1)] },
      { role: 'serve' as const, args: ['serve'] },
      { role: 'serve' as const, args: ['webhooks', 'replay'] },
    ];
    for (const { role, args } of runs) {
      const result = await runCli(args, env(role));
      expect(result.code, `${args[0]}: ${result.stderr}`).toBe(2);
      expect(result.stderr, args[0]).toMatch(
        new RegExp(
          `^insights-sync: schema ${SCHEMA} at [^ ]+ has \\d+ migration\\(s\\) to apply \\([^)]*\\) and role ${roles.role[role]} cannot apply them \\(it does not own the schema\\): run insights-sync migrate as the schema owner\\n$`,
        ),
      );
    }
    const tables = await withClient(roles.adminUrl, (admin) =>
      admin.query(
        `select 1 from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any($1)`,
        [[SCHEMA, BOOKKEEPING, QUEUE]],
      ),
    );
    expect(tables.rowCount).toBe(0);
  });

  it(`once the owner migrated: the sync role is refused ${WRITES.length} writes of the migration state; the serve, analyst and monitor roles too`, async () => {
    await migrateAsOwner(roles);
    for (const role of ['sync', 'serve', 'analyst', 'monitor'] as const)
      for (const statement of WRITES)
        expect(await attempt(roles, role, statement), `${role}: ${statement}`).toMatch(/permission denied/);
    // The owner still may; and the runtime roles still read what they check at start.
    for (const statement of WRITES.slice(0, 4)) expect(await attempt(roles, 'owner', statement)).toBe('ok');
    for (const role of ['sync', 'serve'] as const)
      expect(await attempt(roles, role, `select name from ${BOOKKEEPING}.kysely_migration`), role).toBe('ok');
    // pg-boss's maintenance, in the runtime processes, stamps when it ran: that much stays.
    expect(
      await attempt(roles, 'sync', `update ${QUEUE}.version set cron_on = now(), monitor_backoff_on = now()`),
    ).toBe('ok');
  });

  it('a second migrate (nothing pending) takes nothing more and gives nothing back', async () => {
    const acl = () =>
      withClient(roles.adminUrl, (admin) =>
        admin.query(
          `select c.relname, c.relacl::text, array_agg(a.attname || '=' || a.attacl::text order by a.attname) filter (where a.attacl is not null) as columns
             from pg_class c join pg_namespace n on n.oid = c.relnamespace
             left join pg_attribute a on a.attrelid = c.oid
            where (n.nspname, c.relname) in (($1, 'kysely_migration'), ($1, 'kysely_migration_lock'), ($2, 'version'))
            group by 1, 2 order by 1`,
          [BOOKKEEPING, QUEUE],
        ),
      ).then((r) => JSON.stringify(r.rows));
    const before = await acl();
    expect(await migrateAsOwner(roles)).toEqual([]);
    expect(await acl()).toBe(before);
  });

  it('on the migrated warehouse, backfill as the sync role and serve as the serve role run as before', async () => {
    const backfill = await runCli(
      ['backfill', '--from', addDays(today, -2), '--to', addDays(today, -1), '--resources', 'feedback'],
      env('sync'),
    );
    expect(backfill.code, backfill.stderr).toBe(0);
    const serve = await serveOnce(env('serve'));
    expect(serve, serve.stderr).toMatchObject({ status: 200, code: 0 });
  });

  it('ahead of this version (a newer one migrated it): each runtime command says so in one line, exit 2', async () => {
    await withClient(roles.url.owner, (owner) =>
      owner.query(
        `insert into ${BOOKKEEPING}.kysely_migration (name, timestamp) values ('9999-from-a-newer-version', 'now')`,
      ),
    );
    try {
      for (const [role, args] of [
        ['sync', ['sync']],
        ['serve', ['serve']],
      ] as const) {
        const result = await runCli([...args], env(role));
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toMatch(
          new RegExp(
            `^insights-sync: schema ${SCHEMA} at [^ ]+ has migration 9999-from-a-newer-version, which this insights-sync does not know \\(the newest it knows is ${LATEST_MIGRATION}\\): [^\\n]+\\n$`,
          ),
        );
      }
    } finally {
      await withClient(roles.url.owner, (owner) =>
        owner.query(`delete from ${BOOKKEEPING}.kysely_migration where name = '9999-from-a-newer-version'`),
      );
    }
  });
});
