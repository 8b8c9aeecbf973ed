import { execFile } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';
import { createDatabase, databaseUrl, dropDatabase, withClient } from '../../scripts/dev-database/admin.js';
import { bookkeepingSchema, queueSchema, searchPath } from '../../src/db/bookkeeping.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import { acquireRunLock } from '../../src/db/run-lock.js';
import { silentLogger } from '../../src/log/logger.js';
import { forgetVisitor } from '../../src/privacy/forget-visitor.js';
import {
  ensureWindowQueue,
  openQueue,
  sendWindowJobs,
  windowQueueName,
} from '../../src/queue/window-queue.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { queueStatus } from '../../src/status/queue-status.js';
import { statusReport } from '../../src/status/status-report.js';
import { replayDeliveries } from '../../src/webhooks/replay.js';
import { BOOKKEEPING_TABLES } from '../helpers/bookkeeping-tables.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { databaseServerUrl } from '../helpers/database.js';
import { runAgainst, simulatorSource } from '../helpers/sync-harness.js';
import { truthItems, warehouseItems } from '../helpers/warehouse-truth.js';
import { feedbackBody, MAIN_URL, postJson, receiver } from '../webhooks/webhook-helpers.js';
import {
  createRolesDatabase,
  migrateAsOwner,
  ROLES_SCRIPT,
  type RolesDatabase,
  SCHEMA,
} from './warehouse-roles.js';

/**
 * Guarantee 12: docs/roles.sql, run as written (only the role names made unique, since roles are
 * shared by the whole server), gives each command's role what it needs and nothing more: the
 * owner migrates, the sync role syncs, the serve role receives webhooks, analysts read. What each
 * role may not do, statement by statement, and the trojan view: test/reliability/security.trials.ts.
 */

const BOOKKEEPING = bookkeepingSchema(SCHEMA);

describe('docs/roles.sql', () => {
  let roles: RolesDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    roles = await createRolesDatabase({ migrate: false });
    sim = await startSimulator({
      seed: 3,
      from: '2026-03-01',
      to: '2026-03-05',
      cap: 4000,
      malformedRate: 0.1,
    });
  });
  afterAll(async () => {
    await sim?.stop();
    await roles?.drop();
  });

  it('no role is superuser or can create databases or roles; none but the owner can create in the schema', async () => {
    const rows = await withClient(roles.adminUrl, (admin) =>
      admin.query<{
        rolname: string;
        rolsuper: boolean;
        rolcreatedb: boolean;
        rolcreaterole: boolean;
        rolreplication: boolean;
      }>(
        'select rolname, rolsuper, rolcreatedb, rolcreaterole, rolreplication from pg_roles where rolname = any($1) order by 1',
        [Object.values(roles.role)],
      ),
    );
    expect(rows.rows).toHaveLength(5);
    for (const row of rows.rows)
      expect(row, row.rolname).toMatchObject({
        rolsuper: false,
        rolcreatedb: false,
        rolcreaterole: false,
        rolreplication: false,
      });
    for (const role of ['owner', 'sync', 'serve', 'analyst', 'monitor'] as const)
      await withClient(roles.url[role], async (client) => {
        await expect(client.query('create schema elsewhere'), role).rejects.toThrow(/permission denied/);
        await expect(client.query('create table public.t (x int)'), role).rejects.toThrow(
          /permission denied/,
        );
        if (role !== 'owner')
          for (const schema of [SCHEMA, BOOKKEEPING])
            await expect(
              client.query(`create table ${schema}.t (x int)`),
              `${role} in ${schema}`,
            ).rejects.toThrow(/permission denied/);
      });
  });

  it('a runtime role cannot migrate: with migrations pending, it fails on the first DDL and changes nothing', async () => {
    const sync = roles.as('sync');
    const outcome = await migrateToLatest(sync.db, SCHEMA);
    expect(String(outcome.error)).toMatch(/permission denied for schema insights/);
    const tables = await sql<{ n: number }>`
      select count(*)::int as n from pg_class c join pg_namespace n on n.oid = c.relnamespace
       where n.nspname = ${SCHEMA} and c.relkind = 'r'`.execute(sync.db);
    expect(tables.rows[0]?.n).toBe(0);
  });

  it('the owner migrates; then every runtime role starts (the migrator finds nothing pending, runs no DDL)', async () => {
    const applied = await migrateAsOwner(roles);
    expect(applied.length).toBeGreaterThan(8);
    // What every command does at start today (src/cli/warehouse.ts): as each runtime role, once
    // migrated, it needs SELECT on the migrator's two tables and no CREATE anywhere.
    for (const role of ['sync', 'serve'] as const) {
      const outcome = await migrateToLatest(roles.as(role).db, SCHEMA);
      expect(outcome, role).toEqual({ applied: [] });
    }
  });

  it('as the sync role: a sync under the run lock loads everything (each request reserved on its budget), and forget removes a visitor', async () => {
    const tool = roles.as('sync');
    const lock = await acquireRunLock({ url: roles.url.sync, schema: SCHEMA });
    const result = await runAgainst(tool, sim, {
      now: new Date('2026-03-06T05:00:00.000Z'),
      settings: { maxInvalidShare: 1 },
      // A budget too large to slow the run: each request still writes request_budgets.
      sources: [{ ...simulatorSource(sim), requestsPerSecond: 1000 }],
    });
    const report = await statusReport(tool.db, '2026-03-06');
    await lock.release();
    expect(result.status).toBe('ok');
    expect(await warehouseItems(tool)).toEqual(truthItems(sim.truth()));
    const budgets = await tool.db.selectFrom('request_budgets').select('source_id').execute();
    expect(budgets.map((b) => b.source_id)).toEqual(['main']);
    // status shows who runs, by database user.
    expect(report.runLock).toMatchObject({ pid: process.pid, user: roles.role.sync });
    const visitor = sim.truth().feedback[0]?.visitor.id ?? '';
    expect((await forgetVisitor(tool.db, { visitorId: visitor })).visitors).toBeGreaterThan(0);
  });

  it('as the serve role: the receiver stores a delivery and its row, and replays stored deliveries', async () => {
    const serve = roles.as('serve');
    const app = receiver(serve.pool);
    try {
      expect((await postJson(app, MAIN_URL, feedbackBody({ id: 77 }))).statusCode).toBe(200);
      expect((await postJson(app, MAIN_URL, feedbackBody({ id: 78, feedback_id: 8 }))).statusCode).toBe(200);
    } finally {
      await app.close();
    }
    const stored = await serve.db.selectFrom('webhook_events').select('status').execute();
    expect(stored.map((r) => r.status)).toEqual(['applied', 'applied']);
    const replayed = await replayDeliveries(serve.pool, serve.db);
    expect(replayed.replayed).toBe(2);
  });

  it('an analyst reads every table and view of the data schema; cannot reach the bookkeeping schema; can change nothing', async () => {
    await withClient(roles.url.analyst, async (client) => {
      await client.query(`set search_path = ${searchPath(SCHEMA)}`);
      const relations = await client.query<{ name: string }>(
        `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
         where n.nspname = $1 and c.relkind in ('r', 'v', 'm') order by 1`,
        [SCHEMA],
      );
      expect(relations.rows.length).toBeGreaterThan(15);
      for (const { name } of relations.rows)
        await client.query(`select * from ${client.escapeIdentifier(name)} limit 1`);
      const denied = [
        `insert into sources (source_id, base_url) values ('x', 'y')`,
        'update feedback set comment = null',
        'delete from visitors',
        'drop table feedback',
        'create table analyst_table (x int)',
        'alter table feedback add column x int',
        // The bookkeeping schema: not even its names.
        'select * from sync_windows',
        `select * from ${BOOKKEEPING}.sync_windows`,
        `update ${BOOKKEEPING}.watermarks set day = '2099-01-01'`,
        `truncate ${BOOKKEEPING}.rejects`,
      ];
      for (const statement of denied)
        await expect(client.query(statement), statement).rejects.toThrow(
          /permission denied|must be owner|does not exist/,
        );
      // sync_health is its view of the bookkeeping.
      const health = await client.query('select * from sync_health');
      expect(health.rows.length).toBeGreaterThan(0);
    });
  });

  it('the bookkeeping tables grant SELECT to the roles that read them only: the sync role and the monitor each, the serve role what it checks, the analyst none', async () => {
    const readers = await withClient(roles.adminUrl, (admin) =>
      admin.query<{ role: string; tables: string[] }>(
        `select r.role, coalesce(array_agg(c.relname::text order by c.relname)
                  filter (where has_table_privilege(r.oid, c.oid, 'SELECT')), '{}'::text[]) as tables
           from pg_class c join pg_namespace n on n.oid = c.relnamespace
          cross join (select oid, rolname as role from pg_roles where rolname = any($2)) r
          where n.nspname = $1 and c.relkind = 'r'
          group by r.role`,
        [BOOKKEEPING, [roles.role.sync, roles.role.serve, roles.role.analyst, roles.role.monitor]],
      ),
    );
    const byRole = Object.fromEntries(readers.rows.map((r) => [r.role, r.tables]));
    expect(byRole[roles.role.sync]).toEqual([...BOOKKEEPING_TABLES]);
    expect(byRole[roles.role.monitor]).toEqual([...BOOKKEEPING_TABLES]);
    expect(byRole[roles.role.serve]).toEqual([
      'kysely_migration',
      'kysely_migration_lock',
      'suppressed_visitors',
      'webhook_events',
    ]);
    expect(byRole[roles.role.analyst]).toEqual([]);
  });

  it('a member of the monitor group runs status (it reads the bookkeeping), and changes nothing', async () => {
    const monitor = roles.as('monitor');
    expect((await statusReport(monitor.db, '2026-03-06')).resources.length).toBeGreaterThan(0);
    await expect(sql`update watermarks set day = '2099-01-01'`.execute(monitor.db)).rejects.toThrow(
      /permission denied/,
    );
    await expect(sql`delete from feedback`.execute(monitor.db)).rejects.toThrow(/permission denied/);
  });

  it('the owner installs pg-boss at migrate; as the sync role, a queued run creates its queue through the owner, sends and takes a job, and owns nothing; the monitor reads the queue for status', async () => {
    const settings = {
      sourceConcurrency: 2,
      queueExpireSeconds: 60,
      queueMaintenanceSeconds: 60,
      queueRetryLimit: 1,
    };
    const boss = await openQueue(roles.url.sync, SCHEMA, settings, silentLogger());
    try {
      await ensureWindowQueue(boss, SCHEMA, 'main', settings);
      const [id] = await sendWindowJobs(
        boss,
        'backfill',
        [
          {
            runId: 1,
            source: 'main',
            resource: 'feedback',
            day: '2026-03-01',
            startDay: '2026-03-01',
            today: '2026-03-06',
          },
        ],
        settings,
      );
      const taken = await boss.fetch(windowQueueName('main'));
      expect(taken.map((job) => job.id)).toEqual([id]);
    } finally {
      await boss.stop({ graceful: false });
    }
    // The schema, pg-boss's tables, types and functions, and the source's queue (a table pg-boss
    // added at run time): all the owner's.
    const owners = await withClient(roles.adminUrl, (admin) =>
      admin.query<{ owner: string; n: number }>(
        `select r.rolname as owner, count(*)::int as n from (
           select relowner as o from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1
           union all select proowner from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = $1
           union all select typowner from pg_type t join pg_namespace n on n.oid = t.typnamespace where n.nspname = $1
           union all select nspowner from pg_namespace where nspname = $1) x
         join pg_roles r on r.oid = x.o group by 1`,
        [queueSchema(SCHEMA)],
      ),
    );
    expect(owners.rows.map((r) => r.owner)).toEqual([roles.role.owner]);
    expect(owners.rows[0]?.n).toBeGreaterThan(10);
    const status = await queueStatus(roles.as('monitor').db, SCHEMA);
    expect(status?.sources.map((s) => s.source)).toEqual(['main']);
    await expect(
      sql`select count(*) from ${sql.id(queueSchema(SCHEMA), 'job')}`.execute(roles.as('analyst').db),
    ).rejects.toThrow(/permission denied/);
  });

  it('status, once the queue is used, as each role the README names: the owner, the sync role and a monitor get the report with the queue; an analyst and the serve role one line saying who may (exit 2); never a stack trace', async () => {
    const outcomes: Record<string, { code: number | null; stderr: string; queue: boolean }> = {};
    for (const role of ['owner', 'sync', 'monitor', 'analyst', 'serve'] as const) {
      const result = await runCli(
        ['status', '--json'],
        cliEnv({ DATABASE_URL: roles.url[role], INSIGHTS_SCHEMA: SCHEMA }),
      );
      expect(result.stderr, role).not.toMatch(/\n\s+at /);
      const queue =
        result.stdout === '' ? false : (JSON.parse(result.stdout) as { queue: unknown }).queue !== null;
      outcomes[role] = { code: result.code, stderr: result.stderr, queue };
    }
    for (const role of ['owner', 'sync', 'monitor'])
      expect(outcomes[role], role).toMatchObject({ code: expect.toBeOneOf([0, 1]), queue: true });
    for (const role of ['analyst', 'serve'])
      expect(outcomes[role]?.stderr, role).toMatch(
        /^insights-sync: database user \w+ may not read what this command reads \(permission denied for [^)]*\): run it as the owner, the sync role or a member of insights_monitor \(docs\/roles\.sql\)\n$/,
      );
    expect(outcomes.analyst?.code).toBe(2);
    expect(outcomes.serve?.code).toBe(2);
  }, 120_000);

  it('tables a later migration creates get the same grants (the owner default privileges)', async () => {
    await sql`create table later_migration (x int)`.execute(roles.as('owner').db);
    await sql`insert into later_migration values (1)`.execute(roles.as('sync').db);
    await withClient(roles.url.analyst, async (client) => {
      expect((await client.query(`select x from ${SCHEMA}.later_migration`)).rows).toEqual([{ x: 1 }]);
      await expect(client.query(`delete from ${SCHEMA}.later_migration`)).rejects.toThrow(
        /permission denied/,
      );
    });
    await expect(sql`select x from later_migration`.execute(roles.as('serve').db)).rejects.toThrow(
      /permission denied/,
    );
  });

  it('without a role of the file, a login cannot even connect (PUBLIC has no CONNECT)', async () => {
    const outsider = `outsider_${roles.tag}`;
    await withClient(roles.adminUrl, (admin) =>
      admin.query(`create role ${outsider} login password '${roles.password}'`),
    );
    try {
      const url = new URL(roles.adminUrl);
      url.username = outsider;
      url.password = roles.password;
      const client = new pg.Client({ connectionString: url.toString() });
      await expect(client.connect()).rejects.toThrow(/permission denied for database/);
      await client.end().catch(() => {});
    } finally {
      await withClient(roles.adminUrl, (admin) => admin.query(`drop role ${outsider}`));
    }
  });
});

/** Whether `password` is the one a SCRAM-SHA-256 verifier (pg_authid.rolpassword) was made from. */
function scramMatches(verifier: string, password: string): boolean {
  const match = /^SCRAM-SHA-256\$(\d+):([^$]+)\$([^:]+):/.exec(verifier);
  if (!match?.[1] || !match[2] || !match[3]) return false;
  const salted = pbkdf2Sync(password, Buffer.from(match[2], 'base64'), Number(match[1]), 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  return createHash('sha256').update(clientKey).digest('base64') === match[3];
}

describe('the serve role and the rows the API loaded', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
    // What a sync (the sync role) loaded from the API: a feedback row, its
    // screenshot still empty, and its visitor's e-mail.
    const sync = roles.as('sync');
    await sql`insert into sources (source_id, base_url) values ('main', 'http://api.example.test')`.execute(
      sync.db,
    );
    await sql`insert into visitors (source_id, id, email, observed_at, raw)
              values ('main', 'v-1', 'api@example.test', now(), '{}')`.execute(sync.db);
    await sql`insert into feedback (source_id, id, feedback_id, question, session, comment, visitor_id, raw, origin)
              values ('main', 1001, 7, 'Q', 's-1', 'from the API', 'v-1', '{}', 'api')`.execute(sync.db);
  });
  afterAll(async () => {
    await roles?.drop();
  });

  const apiRow = async () => {
    const { rows } = await withClient(roles.adminUrl, (admin) =>
      admin.query<{ comment: string; screenshot: string | null; origin: string; email: string }>(
        `select f.comment, f.screenshot, f.origin, v.email
           from ${SCHEMA}.feedback f join ${SCHEMA}.visitors v on v.source_id = f.source_id and v.id = f.visitor_id
          where f.source_id = 'main' and f.id = 1001 and f.feedback_id = 7`,
      ),
    );
    return rows[0];
  };

  it('cannot rewrite, remove or plant them by SQL: UPDATE, DELETE and INSERT on feedback, survey_answers and visitors are refused, UPDATE on sources too', async () => {
    await withClient(roles.url.serve, async (client) => {
      await client.query(`set search_path = ${searchPath(SCHEMA)}`);
      const refused = [
        `update feedback set comment = 'rewritten' where source_id = 'main'`,
        `update visitors set email = 'attacker@example.test'`,
        `update survey_answers set comment = 'rewritten'`,
        'delete from feedback',
        'delete from visitors',
        `insert into feedback (source_id, id, feedback_id, raw) values ('main', 1, 1, '{}')`,
        `insert into visitors (source_id, id, raw) values ('main', 'planted', '{}')`,
        `insert into survey_answers (source_id, id, question_id, raw) values ('main', 1, 1, '{}')`,
        `update sources set base_url = 'http://attacker.test'`,
      ];
      for (const statement of refused)
        await expect(client.query(statement), statement).rejects.toThrow(/permission denied/);
    });
    expect(await apiRow()).toEqual({
      comment: 'from the API',
      screenshot: null,
      origin: 'api',
      email: 'api@example.test',
    });
  });

  it("through the owner's merge_webhook_rows(), called by hand with any rows: a value already there is never changed, only an empty one filled", async () => {
    await withClient(roles.url.serve, async (client) => {
      await client.query(`set search_path = ${searchPath(SCHEMA)}`);
      const { rows } = await client.query('select * from merge_webhook_rows($1, $2, $3)', [
        JSON.stringify([{ source_id: 'main', id: 'v-1', email: 'attacker@example.test', raw: '{}' }]),
        JSON.stringify([
          {
            source_id: 'main',
            id: 1001,
            feedback_id: 7,
            comment: 'rewritten',
            question: 'Q2',
            screenshot: 'https://cdn.example.test/1.png',
            visitor_id: 'v-2',
            raw: {},
          },
        ]),
        '[]',
      ]);
      expect(rows).toEqual([
        { written_table: 'feedback', source_id: 'main', id: '1001', key2: '7', inserted: false },
      ]);
    });
    expect(await apiRow()).toEqual({
      comment: 'from the API',
      screenshot: 'https://cdn.example.test/1.png',
      origin: 'both',
      email: 'api@example.test',
    });
  });

  it('the receiver, as the serve role, stores a delivery for a row the API loaded and changes none of its values', async () => {
    const serve = roles.as('serve');
    const app = receiver(serve.pool);
    try {
      const body = feedbackBody({ comment: 'from a webhook', question: 'Q3' });
      const answer = await postJson(app, MAIN_URL, body);
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toMatchObject({ status: 'applied', duplicate: false });
    } finally {
      await app.close();
    }
    expect(await apiRow()).toMatchObject({ comment: 'from the API', email: 'api@example.test' });
  });

  it('migration 0035 takes the direct writes from a receiver set up before it (its down gives them back, its up takes them again)', async () => {
    const owner = roles.as('owner');
    const migration = migrations['0035-webhook-merge-function'];
    const canWrite = () =>
      withClient(roles.adminUrl, async (admin) => {
        const { rows } = await admin.query<{ update: boolean; execute: boolean }>(
          `select has_table_privilege($1, '${SCHEMA}.feedback', 'UPDATE') as update,
                  has_function_privilege($1, '${BOOKKEEPING}.merge_webhook_rows(jsonb, jsonb, jsonb)', 'EXECUTE') as execute`,
          [roles.role.serve],
        );
        return rows[0];
      });
    expect(await canWrite()).toEqual({ update: false, execute: true });
    await migration?.down?.(owner.db);
    await withClient(roles.adminUrl, async (admin) => {
      const { rows } = await admin.query<{ update: boolean }>(
        `select has_table_privilege($1, '${SCHEMA}.feedback', 'UPDATE') as update`,
        [roles.role.serve],
      );
      expect(rows[0]?.update).toBe(true);
    });
    await migration?.up(owner.db);
    expect(await canWrite()).toEqual({ update: false, execute: true });
  });
});

describe('scripts/docker-initdb/10-roles.sh (the postgres image runs it on its first start)', () => {
  const INIT = readFileSync(
    fileURLToPath(new URL('../../scripts/docker-initdb/10-roles.sh', import.meta.url)),
    'utf8',
  );

  it('runs docs/roles.sql and sets the password of each login role from the environment, printing none', async () => {
    const tag = randomBytes(3).toString('hex');
    const names = [
      'insights_owner',
      'insights_sync',
      'insights_serve',
      'insights_analyst',
      'insights_monitor',
    ];
    const unique = (text: string) => names.reduce((t, name) => t.replaceAll(name, `${name}_${tag}`), text);
    const dir = mkdtempSync(join(tmpdir(), 'insights-initdb-'));
    const database = `insights_initdb_${tag}`;
    const server = new URL(databaseServerUrl());
    const passwords = {
      INSIGHTS_OWNER_PASSWORD: `owner-${randomBytes(8).toString('hex')}`,
      INSIGHTS_SYNC_PASSWORD: `sync-${randomBytes(8).toString('hex')}`,
      INSIGHTS_SERVE_PASSWORD: `serve-${randomBytes(8).toString('hex')}`,
    };
    await withClient(server.toString(), (admin) => createDatabase(admin, database));
    try {
      writeFileSync(join(dir, 'roles.sql'), unique(ROLES_SCRIPT));
      writeFileSync(join(dir, '10-roles.sh'), unique(INIT));
      // As the image runs it: its superuser and database in POSTGRES_USER and POSTGRES_DB.
      const { stdout, stderr } = await promisify(execFile)('sh', [join(dir, '10-roles.sh')], {
        env: {
          PATH: process.env.PATH ?? '',
          PGHOST: server.hostname,
          PGPORT: server.port || '5432',
          ...(server.password ? { PGPASSWORD: decodeURIComponent(server.password) } : {}),
          POSTGRES_USER: decodeURIComponent(server.username),
          POSTGRES_DB: database,
          ROLES_SQL: join(dir, 'roles.sql'),
          ...passwords,
        },
      });
      for (const password of Object.values(passwords)) expect(`${stdout}${stderr}`).not.toContain(password);
      const verifiers = await withClient(databaseUrl(server.toString(), database), (admin) =>
        admin.query<{ rolname: string; rolpassword: string | null; rolcanlogin: boolean }>(
          'select rolname, rolpassword, rolcanlogin from pg_authid where rolname = any($1) order by 1',
          [names.map((n) => `${n}_${tag}`)],
        ),
      );
      const byName = Object.fromEntries(verifiers.rows.map((r) => [r.rolname.replace(`_${tag}`, ''), r]));
      expect(scramMatches(byName.insights_owner?.rolpassword ?? '', passwords.INSIGHTS_OWNER_PASSWORD)).toBe(
        true,
      );
      expect(scramMatches(byName.insights_sync?.rolpassword ?? '', passwords.INSIGHTS_SYNC_PASSWORD)).toBe(
        true,
      );
      expect(scramMatches(byName.insights_serve?.rolpassword ?? '', passwords.INSIGHTS_SERVE_PASSWORD)).toBe(
        true,
      );
      // The check itself can fail: another password does not match.
      expect(scramMatches(byName.insights_sync?.rolpassword ?? '', passwords.INSIGHTS_SERVE_PASSWORD)).toBe(
        false,
      );
      expect(byName.insights_analyst).toMatchObject({ rolpassword: null, rolcanlogin: false });
      expect(byName.insights_monitor).toMatchObject({ rolpassword: null, rolcanlogin: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await withClient(server.toString(), async (admin) => {
        await dropDatabase(admin, database);
        for (const name of [...names].reverse()) await admin.query(`drop role if exists ${name}_${tag}`);
      });
    }
  });
});
