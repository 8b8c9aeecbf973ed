import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withClient } from '../../scripts/dev-database/admin.js';
import { bookkeepingSchema, queueSchema, searchPath } from '../../src/db/bookkeeping.js';
import { createDb, createPool } from '../../src/db/connection.js';
import { acquireRunLock } from '../../src/db/run-lock.js';
import { CliError, LockError } from '../../src/errors.js';
import { advanceWatermark } from '../../src/ledger/watermark.js';
import { recordWindowDrift } from '../../src/load/schema-drift.js';
import { lockSourceSnapshots } from '../../src/load/snapshot-versions.js';
import { lockSuppressionList, suppressedVisitors } from '../../src/privacy/suppression.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createRolesDatabase, type RoleName, type RolesDatabase, SCHEMA } from './warehouse-roles.js';

/**
 * The security suite, database side (docs/security.md names each row's proof):
 * - each role of docs/roles.sql, as written: every statement of the table below, run for real;
 * - the trojan view: no runtime role can replace a view, create a function in the schema or
 *   alter a table, and it owns nothing; under the old layout (a runtime role owning the views)
 *   the same statements make that role superuser when a superuser reads the view;
 * - the analyst against the run lock: taking it (at once or waiting), holding anything that
 *   would keep a run out, passing itself off as the holder.
 * The webhook flood and slow sockets: test/webhooks/bounded.test.ts; PII key variants:
 * test/reliability/pii-variants.test.ts; the report's CSP: test/report/report-browser.test.ts.
 */

const ROLES: readonly RoleName[] = ['owner', 'sync', 'serve', 'analyst', 'monitor'];
const BOOKKEEPING = bookkeepingSchema(SCHEMA);
const QUEUE = queueSchema(SCHEMA);

interface Row {
  kind: 'select' | 'insert' | 'update' | 'delete' | 'ddl' | 'lock' | 'temp' | 'role' | 'execute';
  statement: string;
  /** The roles for which it succeeds; it is refused for the others. */
  allowed: readonly RoleName[];
}

/** Each statement runs in a transaction rolled back afterwards: nothing it does stays. */
const MATRIX: readonly Row[] = [
  {
    kind: 'select',
    statement: 'select count(*) from feedback',
    allowed: ['owner', 'sync', 'serve', 'analyst', 'monitor'],
  },
  {
    kind: 'select',
    statement: 'select count(*) from sync_health',
    allowed: ['owner', 'sync', 'analyst', 'monitor'],
  },
  // The bookkeeping schema is not the analyst's (it reads sync_health): no USAGE on it, and no
  // grant on its tables either. The monitor reads it for status.
  {
    kind: 'select',
    statement: `select count(*) from ${BOOKKEEPING}.watermarks`,
    allowed: ['owner', 'sync', 'monitor'],
  },
  {
    kind: 'select',
    statement: `select count(*) from ${BOOKKEEPING}.kysely_migration`,
    allowed: ['owner', 'sync', 'serve', 'monitor'],
  },
  { kind: 'select', statement: `select count(*) from ${QUEUE}.job`, allowed: ['owner', 'sync', 'monitor'] },
  {
    kind: 'insert',
    statement: `insert into ${QUEUE}.job (name, data) values ('windows.main', '{}')`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'insert',
    statement: `insert into sources (source_id, base_url) values ('matrix', 'http://x')`,
    allowed: ['owner', 'sync', 'serve'],
  },
  {
    kind: 'insert',
    statement: `insert into ${BOOKKEEPING}.webhook_events (source_id, body, body_hash, status) values ('main', '{}', 'h', 'applied')`,
    allowed: ['owner', 'sync', 'serve'],
  },
  {
    kind: 'insert',
    statement: `insert into visitors (source_id, id, raw) values ('main', 'matrix', '{}')`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'insert',
    statement: `insert into ${BOOKKEEPING}.watermarks (source_id, resource, start_day) values ('main', 'feedback', '2099-01-01')`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'insert',
    statement: `insert into ${BOOKKEEPING}.sync_runs (trigger, status) values ('sync', 'running')`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'update',
    statement: `update ${BOOKKEEPING}.webhook_events set status = 'applied'`,
    allowed: ['owner', 'sync', 'serve'],
  },
  { kind: 'update', statement: `update feedback set comment = comment`, allowed: ['owner', 'sync'] },
  { kind: 'update', statement: `update visitors set email = email`, allowed: ['owner', 'sync'] },
  {
    kind: 'update',
    statement: `update ${BOOKKEEPING}.sync_windows set status = 'done'`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'update',
    statement: `update ${BOOKKEEPING}.suppressed_visitors set hashed = hashed`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'delete',
    statement: `delete from ${BOOKKEEPING}.webhook_events`,
    allowed: ['owner', 'sync', 'serve'],
  },
  { kind: 'delete', statement: 'delete from feedback', allowed: ['owner', 'sync'] },
  { kind: 'delete', statement: `delete from ${BOOKKEEPING}.suppressed_visitors`, allowed: ['owner', 'sync'] },
  { kind: 'delete', statement: `truncate ${BOOKKEEPING}.rejects`, allowed: ['owner'] },
  { kind: 'ddl', statement: 'create table matrix_table (x int)', allowed: ['owner'] },
  { kind: 'ddl', statement: 'alter table feedback add column matrix int', allowed: ['owner'] },
  { kind: 'ddl', statement: `drop table ${BOOKKEEPING}.run_lock`, allowed: ['owner'] },
  { kind: 'ddl', statement: 'create index on feedback (comment)', allowed: ['owner'] },
  {
    kind: 'ddl',
    statement: 'create function matrix_fn() returns int language sql as $$ select 1 $$',
    allowed: ['owner'],
  },
  { kind: 'ddl', statement: 'create view matrix_view as select 1 as x', allowed: ['owner'] },
  {
    kind: 'ddl',
    statement: `create trigger matrix_trigger before insert on feedback for each row execute function suppress_redundant_updates_trigger()`,
    allowed: ['owner'],
  },
  { kind: 'ddl', statement: 'create table public.matrix_table (x int)', allowed: [] },
  { kind: 'ddl', statement: `alter table ${QUEUE}.job rename to job_real`, allowed: ['owner'] },
  { kind: 'ddl', statement: `create view ${QUEUE}.matrix_view as select 1 as x`, allowed: ['owner'] },
  {
    kind: 'lock',
    statement: `lock table ${BOOKKEEPING}.run_lock in share update exclusive mode nowait`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'lock',
    statement: `lock table ${BOOKKEEPING}.run_lock in exclusive mode nowait`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'lock',
    statement: `lock table ${BOOKKEEPING}.run_lock in row exclusive mode nowait`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'lock',
    statement: `lock table ${BOOKKEEPING}.webhook_events in row exclusive mode nowait`,
    allowed: ['owner', 'sync', 'serve'],
  },
  {
    kind: 'lock',
    statement: 'lock table feedback in access share mode nowait',
    allowed: ['owner', 'sync', 'serve', 'analyst', 'monitor'],
  },
  // What the receiver may still do, since it updates feedback: bounded by its
  // idle_in_transaction_session_timeout, and a sync waiting on it says so (the trial below).
  {
    kind: 'lock',
    statement: 'lock table feedback in access exclusive mode nowait',
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'lock',
    statement: `select * from ${BOOKKEEPING}.suppression_lock for update nowait`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'lock',
    statement: `lock table ${BOOKKEEPING}.suppression_lock in access exclusive mode nowait`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'execute',
    statement: `select ${BOOKKEEPING}.share_suppression_lock()`,
    allowed: ['owner', 'sync', 'serve'],
  },
  {
    kind: 'execute',
    statement: `select ${BOOKKEEPING}.create_window_queue('windows.matrix', '{"policy":"standard"}')`,
    allowed: ['owner', 'sync'],
  },
  {
    kind: 'execute',
    statement: `select * from ${BOOKKEEPING}.merge_webhook_rows('[]', '[]', '[]')`,
    allowed: ['owner', 'serve'],
  },
  {
    kind: 'lock',
    statement: `select * from ${BOOKKEEPING}.run_lock for update nowait`,
    allowed: ['owner', 'sync'],
  },
  // A window's turn at the inventory of unknown fields: a row lock only the writers may take.
  {
    kind: 'lock',
    statement: `select * from ${BOOKKEEPING}.schema_drift_turns for update nowait`,
    allowed: ['owner', 'sync'],
  },
  // The migration state is the owner's: pg-boss's maintenance stamps its times, nothing more.
  { kind: 'delete', statement: `delete from ${BOOKKEEPING}.kysely_migration`, allowed: ['owner'] },
  {
    kind: 'update',
    statement: `update ${BOOKKEEPING}.kysely_migration_lock set is_locked = 1`,
    allowed: ['owner'],
  },
  { kind: 'update', statement: `update ${QUEUE}.version set version = 20`, allowed: ['owner'] },
  {
    kind: 'update',
    statement: `update ${QUEUE}.version set cron_on = now()`,
    allowed: ['owner', 'sync'],
  },
  { kind: 'temp', statement: 'create temporary table matrix_temp (x int)', allowed: ['sync'] },
  { kind: 'role', statement: 'create role matrix_role', allowed: [] },
  { kind: 'role', statement: 'alter role current_user superuser', allowed: [] },
  { kind: 'role', statement: 'create schema matrix_schema', allowed: [] },
  { kind: 'role', statement: `select ${SCHEMA}.grant_serve()`, allowed: ['owner'] },
];

/** Ways a role with SELECT (or nothing) could hold a lock on run_lock in an open transaction. */
const HOLD_ATTEMPTS: readonly string[] = [
  'select * from run_lock',
  'lock table run_lock in access share mode',
  'prepare hold as select * from run_lock for update',
  'prepare hold as select * from run_lock for share',
  'prepare hold as select * from run_lock for key share',
  'prepare hold as insert into run_lock values (true)',
  'prepare hold as update run_lock set id = true',
  'prepare hold as delete from run_lock',
  'prepare hold as merge into run_lock t using (select true as id) s on t.id = s.id when matched then delete',
  `do $$ begin begin comment on table run_lock is 'x'; exception when others then null; end; end $$`,
  `do $$ begin begin lock table run_lock in share update exclusive mode; exception when others then null; end; end $$`,
  `do $$ begin begin alter table run_lock add column x int; exception when others then null; end; end $$`,
  `do $$ begin begin analyze run_lock; exception when others then null; end; end $$`,
  `do $$ begin begin create statistics st on id, id from run_lock; exception when others then null; end; end $$`,
  'analyze run_lock',
  'select pg_advisory_lock(hashtext($$insights-sync$$), hashtext($$insights$$))',
];

const SECURITY_DOC = fileURLToPath(new URL('../../docs/security.md', import.meta.url));
const MATRIX_START =
  '<!-- role-matrix: written by test/reliability/security.trials.ts (INSIGHTS_WRITE_DOCS=1 rewrites it) -->';
const MATRIX_END = '<!-- /role-matrix -->';

/** docs/security.md's role matrix: each statement, which roles it ran for, the counts per role. */
function matrixSection(
  outcomes: ReadonlyMap<string, boolean>,
  counts: Record<string, { allowed: number; refused: number } | undefined>,
): string {
  const cell = (text: string) => `\`${text.replaceAll('|', '\\|')}\``;
  const lines = [
    `| kind | statement | ${ROLES.join(' | ')} |`,
    `|---|---|${ROLES.map(() => '---').join('|')}|`,
    ...MATRIX.map(
      (row) =>
        `| ${row.kind} | ${cell(row.statement)} | ${ROLES.map((role) => (outcomes.get(`${role} ${row.statement}`) ? 'yes' : '—')).join(' | ')} |`,
    ),
    `| | **allowed / refused** (${MATRIX.length} statements) | ${ROLES.map((r) => `${counts[r]?.allowed} / ${counts[r]?.refused}`).join(' | ')} |`,
  ];
  return `${MATRIX_START}\n${lines.join('\n')}\n${MATRIX_END}`;
}

/** The section as the doc has it must be the one just run; INSIGHTS_WRITE_DOCS=1 writes it. */
async function checkMatrixSection(section: string): Promise<void> {
  const doc = readFileSync(SECURITY_DOC, 'utf8');
  const start = doc.indexOf(MATRIX_START);
  const end = doc.indexOf(MATRIX_END);
  expect(start, 'docs/security.md has no role matrix section').toBeGreaterThanOrEqual(0);
  const current = doc.slice(start, end + MATRIX_END.length);
  if (process.env.INSIGHTS_WRITE_DOCS === '1' && current !== section)
    writeFileSync(SECURITY_DOC, `${doc.slice(0, start)}${section}${doc.slice(end + MATRIX_END.length)}`);
  else
    expect(current, 'docs/security.md: rerun with INSIGHTS_WRITE_DOCS=1 and commit the section').toBe(
      section,
    );
}

/** A client of `url`, with the warehouse's search_path; the caller ends it. */
async function connect(url: string, applicationName = 'insights-sync-tests'): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: applicationName });
  client.on('error', () => {});
  await client.connect();
  await client.query(`set search_path = ${searchPath(SCHEMA)}`);
  return client;
}

/** Runs `statement` as `role` in a transaction that is rolled back: 'ok', or the error's text. */
async function attempt(roles: RolesDatabase, role: RoleName, statement: string): Promise<string> {
  const client = await connect(roles.url[role]);
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

describe('security: the roles of docs/roles.sql and the run lock', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
    // A source for the statements whose rows reference one, and its queue.
    await withClient(roles.adminUrl, (admin) =>
      admin.query(
        `insert into ${SCHEMA}.sources (source_id, base_url) values ('main', 'http://127.0.0.1:1')`,
      ),
    );
    await withClient(roles.url.sync, (client) =>
      client.query(`select ${BOOKKEEPING}.create_window_queue('windows.main', '{"policy":"standard"}')`),
    );
  });
  afterAll(() => roles?.drop());

  it(`each role, ${MATRIX.length} statements each (${MATRIX.length * ROLES.length} in all): allowed ones run, every other is refused`, async () => {
    const wrong: string[] = [];
    const counts = Object.fromEntries(ROLES.map((r) => [r, { allowed: 0, refused: 0 }]));
    const outcomes = new Map<string, boolean>();
    for (const row of MATRIX) {
      for (const role of ROLES) {
        const outcome = await attempt(roles, role, row.statement);
        outcomes.set(`${role} ${row.statement}`, outcome === 'ok');
        const expected = row.allowed.includes(role);
        const refused = /permission denied|must be owner|must be superuser|must have .*privilege/.test(
          outcome,
        );
        if (expected ? outcome !== 'ok' : !refused)
          wrong.push(`${role} [${row.kind}] ${row.statement}: ${outcome}`);
        const count = counts[role];
        if (count) count[outcome === 'ok' ? 'allowed' : 'refused'] += 1;
      }
    }
    expect(wrong).toEqual([]);
    process.stdout.write(
      `role matrix: ${ROLES.map((r) => `${r} ${counts[r]?.allowed} allowed / ${counts[r]?.refused} refused`).join('; ')}\n`,
    );
    // Every kind of statement is tried, and every runtime role is refused something of each kind
    // it does not need.
    expect(new Set(MATRIX.map((r) => r.kind)).size).toBe(9);
    await checkMatrixSection(matrixSection(outcomes, counts));
  });

  it('the trojan view: as the sync, serve and analyst roles, 5 statements each (replace a view, a function in the schema or in pg_temp, alter a table or view): 14 of 15 refused, the 15th harmless; they own nothing', async () => {
    const trojan = [
      'create or replace view sync_health as select 1 as x',
      `create function ${SCHEMA}.trojan() returns int language plpgsql as $$ begin execute 'alter role ' || current_user || ' superuser'; return 1; end $$`,
      'alter table feedback owner to current_user',
      'alter view sync_health rename to sync_health_old',
      'create or replace function pg_temp.trojan() returns int language sql as $$ select 1 $$',
    ];
    let refused = 0;
    for (const role of ['sync', 'serve', 'analyst'] as const) {
      for (const statement of trojan) {
        const outcome = await attempt(roles, role, statement);
        // A temporary function is the sync role's own, in its own session: a view of the schema
        // cannot call it, and no one else's search_path reaches it. The others have no TEMPORARY.
        if (role === 'sync' && statement.includes('pg_temp')) expect(outcome).toBe('ok');
        else {
          expect(outcome, `${role}: ${statement}`).toMatch(/permission denied|must be owner/);
          refused += 1;
        }
      }
    }
    expect(refused).toBe(14);
    const owned = await withClient(roles.adminUrl, (admin) =>
      admin.query<{ owner: string; n: number }>(
        `select r.rolname as owner, count(*)::int as n from (
           select relowner as o from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1
           union all select proowner from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = $1
           union all select typowner from pg_type t join pg_namespace n on n.oid = t.typnamespace where n.nspname = $1
           union all select nspowner from pg_namespace where nspname = $1) x
         join pg_roles r on r.oid = x.o group by 1`,
        [SCHEMA],
      ),
    );
    expect(owned.rows.map((r) => r.owner)).toEqual([roles.role.owner]);
  });

  it('control: under the old layout (the runtime role owns the view), the same statements make it superuser once a superuser reads the view', async () => {
    const victim = `insights_old_layout_${roles.tag}`;
    await withClient(roles.adminUrl, async (admin) => {
      await admin.query(`create role ${victim} login password '${roles.password}'`);
      await admin.query(
        `grant connect on database ${admin.escapeIdentifier(new URL(roles.adminUrl).pathname.slice(1))} to ${victim}`,
      );
      await admin.query(`create schema old_layout authorization ${victim}`);
    });
    try {
      const url = new URL(roles.adminUrl);
      url.username = victim;
      url.password = roles.password;
      await withClient(url.toString(), async (client) => {
        await client.query('create view old_layout.sync_health as select 1 as x');
        await client.query(
          `create function old_layout.trojan() returns int language plpgsql as $$ begin execute 'alter role ${victim} superuser'; return 1; end $$`,
        );
        await client.query(
          'create or replace view old_layout.sync_health as select old_layout.trojan() as x',
        );
      });
      const superuser = await withClient(roles.adminUrl, async (admin) => {
        await admin.query('select * from old_layout.sync_health');
        return (
          await admin.query<{ s: boolean }>('select rolsuper as s from pg_roles where rolname = $1', [victim])
        ).rows[0]?.s;
      });
      expect(superuser).toBe(true);
    } finally {
      await withClient(roles.adminUrl, async (admin) => {
        // It is a superuser now, if the attack worked: never left behind on the shared server.
        await admin.query('drop schema old_layout cascade');
        await admin.query(`drop owned by ${victim}`);
        await admin.query(`drop role ${victim}`);
      });
    }
  });

  it('the analyst (and the serve role) cannot take the run lock: 2 roles x 2 ways (at once, waiting), refused at once with one line', async () => {
    for (const role of ['analyst', 'serve'] as const)
      for (const wait of [false, true]) {
        const taking = acquireRunLock({ url: roles.url[role], schema: SCHEMA, wait, pollMs: 20 });
        await expect(taking, `${role} wait=${wait}`).rejects.toBeInstanceOf(CliError);
        await expect(taking).rejects.toThrow(
          /^this database user may not take the run lock of schema insights \(it needs UPDATE on insights_state\.run_lock\)/,
        );
      }
    // A LOCK in any mode that would keep a run out is refused before it queues.
    const analyst = await connect(roles.url.analyst);
    try {
      for (const mode of [
        'share update exclusive',
        'share',
        'share row exclusive',
        'exclusive',
        'access exclusive',
      ]) {
        await analyst.query('begin');
        await expect(
          analyst.query(`lock table ${BOOKKEEPING}.run_lock in ${mode} mode`),
          mode,
        ).rejects.toThrow(/permission denied/);
        await analyst.query('rollback');
      }
    } finally {
      await analyst.end();
    }
  });

  // The serve role has USAGE on the bookkeeping schema and no right on run_lock; the analyst
  // has neither (its attempts fail before they lock anything, and are tried all the same).
  it(`the serve and analyst roles hold each of ${HOLD_ATTEMPTS.length} locks they can get on run_lock in an open transaction, under a decoy name: a run still takes the lock, and the next is told the real holder`, async () => {
    const decoy = 'insights-sync pid=1 host=decoy';
    let ran = 0;
    for (const holder of ['serve', 'analyst'] as const) {
      for (const statement of HOLD_ATTEMPTS) {
        const held = await connect(roles.url[holder], decoy);
        try {
          await held.query('begin');
          await held.query(statement).catch(() => {});
          const lock = await acquireRunLock({ url: roles.url.sync, schema: SCHEMA });
          try {
            const second = acquireRunLock({ url: roles.url.sync, schema: SCHEMA });
            await expect(second, `${holder}: ${statement}`).rejects.toBeInstanceOf(LockError);
            await expect(second).rejects.toThrow(
              `(pid ${process.pid} on host ${hostname()}, database user ${roles.role.sync}, since`,
            );
            ran += 1;
          } finally {
            await lock.release();
          }
        } finally {
          await held.query('rollback').catch(() => {});
          await held.end();
        }
      }
    }
    expect(ran).toBe(2 * HOLD_ATTEMPTS.length);
    process.stdout.write(`run lock: ${ran} holds tried, ${ran} runs took the lock anyway\n`);
  });

  it('what EXCLUSIVE mode would have let through: a role with no right on run_lock (serve) PREPAREing an insert keeps it out (why the lock uses SHARE UPDATE EXCLUSIVE)', async () => {
    const holder = await connect(roles.url.serve);
    const sync = await connect(roles.url.sync);
    try {
      await holder.query('begin');
      await holder.query('prepare hold as insert into run_lock values (true)');
      await sync.query('begin');
      await expect(sync.query('lock table run_lock in exclusive mode nowait')).rejects.toThrow(
        /could not obtain lock/,
      );
      await sync.query('rollback');
      await sync.query('begin');
      await sync.query('lock table run_lock in share update exclusive mode nowait');
      await sync.query('rollback');
    } finally {
      await holder.query('rollback').catch(() => {});
      await holder.end();
      await sync.end();
    }
  });

  /**
   * What an analyst can hold on the two tables whose rows serialise writers (and the advisory
   * keys they used before): each is held in an open transaction while the real code takes its
   * lock as the sync and serve roles, with a 2 s lock_timeout instead of waiting forever.
   */
  const WRITER_HOLDS = [
    'lock table suppression_lock in access share mode',
    'prepare h as insert into suppression_lock values (true)',
    'prepare h as update suppression_lock set id = true',
    'prepare h as delete from suppression_lock',
    'prepare h as select * from suppression_lock for update',
    'lock table watermarks in access share mode',
    `prepare h as update watermarks set day = day`,
    `prepare h as select * from watermarks for update`,
    'lock table sources in access share mode',
    'prepare h as update sources set base_url = base_url',
    'prepare h as select * from sources for update',
    `select pg_advisory_xact_lock(hashtext('insights-sync suppressed_visitors'), hashtext(current_schema()))`,
    `select pg_advisory_xact_lock(hashtext('insights-sync watermark main feedback'))`,
    'lock table schema_drift_turns in access share mode',
    'prepare h as insert into schema_drift_turns values ($$main$$, $$feedback$$)',
    'prepare h as update schema_drift_turns set resource = resource',
    'prepare h as select * from schema_drift_turns for update',
    `select pg_advisory_xact_lock(hashtext('schema_drift:main:feedback'))`,
  ];

  it(`the analyst cannot hold up a window (its watermark or its turn at the inventory of unknown fields), a delivery or a forget: ${WRITER_HOLDS.length} holds on suppression_lock, watermarks, sources, schema_drift_turns and the old advisory keys, and the writers' locks are taken each time`, async () => {
    const session = (role: RoleName) => {
      const pool = createPool({ url: roles.url[role], schema: SCHEMA, max: 1 });
      return { pool, db: createDb(pool) };
    };
    const sync = session('sync');
    const serve = session('serve');
    const inTransaction = <T>(db: typeof sync.db, fn: (trx: typeof sync.db) => Promise<T>) =>
      db.transaction().execute(async (trx) => {
        await sql`set local lock_timeout = '2s'`.execute(trx);
        return fn(trx);
      });
    let taken = 0;
    try {
      for (const statement of WRITER_HOLDS) {
        const analyst = await connect(roles.url.analyst);
        try {
          await analyst.query('begin');
          await analyst.query(statement).catch(() => {});
          // A window's or a delivery's check of the list (FOR KEY SHARE), as sync and as serve.
          for (const writer of [sync, serve])
            await inTransaction(writer.db, (trx) => suppressedVisitors({ db: trx }, 'main', ['v-1']));
          // forget and unforget (FOR UPDATE), and a window's watermark (its row FOR UPDATE).
          await inTransaction(sync.db, (trx) => lockSuppressionList(trx));
          await inTransaction(sync.db, (trx) =>
            advanceWatermark(trx, 'main', 'feedback', '2026-01-01', '2026-01-02'),
          );
          // A snapshot load's hold on its source's lists (the sources row FOR NO KEY UPDATE).
          await inTransaction(sync.db, (trx) => lockSourceSnapshots({ db: trx }, 'main'));
          // A window with an unknown field: its turn at the inventory (its pair's row FOR UPDATE).
          await inTransaction(sync.db, (trx) =>
            recordWindowDrift(trx, {
              sourceId: 'main',
              resource: 'feedback',
              day: '2026-01-01',
              runId: null,
              total: 1,
              counts: new Map([['x_matrix', 1]]),
              seenAt: new Date(),
            }),
          );
          taken += 1;
        } finally {
          await analyst.query('rollback').catch(() => {});
          await analyst.end();
        }
      }
    } finally {
      await sync.db.destroy();
      await serve.db.destroy();
    }
    expect(taken).toBe(WRITER_HOLDS.length);
    process.stdout.write(
      `writers' locks: ${WRITER_HOLDS.length} analyst holds tried, ${taken} times all taken\n`,
    );
  });

  it('control: the advisory lock the suppression list used before is one an analyst holds against the sync role', async () => {
    const analyst = await connect(roles.url.analyst);
    const sync = await connect(roles.url.sync);
    try {
      await analyst.query('begin');
      await analyst.query(
        `select pg_advisory_xact_lock(hashtext('insights-sync suppressed_visitors'), hashtext(current_schema()))`,
      );
      await sync.query('begin');
      await sync.query(`set local lock_timeout = '500ms'`);
      await expect(
        sync.query(
          `select pg_advisory_xact_lock_shared(hashtext('insights-sync suppressed_visitors'), hashtext(current_schema()))`,
        ),
      ).rejects.toThrow(/lock timeout/);
    } finally {
      await analyst.query('rollback').catch(() => {});
      await sync.query('rollback').catch(() => {});
      await analyst.end();
      await sync.end();
    }
  });
});

/** Each role's attributes and every grant in the warehouse's schemas: what a trojan would change. */
async function rightsSnapshot(roles: RolesDatabase): Promise<string> {
  return withClient(roles.adminUrl, async (admin) => {
    const attributes = await admin.query(
      `select rolname, rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls
         from pg_roles where rolname like $1 order by 1`,
      [`%${roles.tag}`],
    );
    const grants = await admin.query(
      `select n.nspname, c.relname, c.relowner::regrole::text as owner, c.relacl::text as acl
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = any($1) order by 1, 2`,
      [[SCHEMA, BOOKKEEPING, QUEUE]],
    );
    return JSON.stringify([attributes.rows, grants.rows]);
  });
}

/** The attack as the sync role could make it when it owned the queue schema: rename, view, function. */
const QUEUE_TROJAN = (role: string) => [
  `alter table ${QUEUE}.job rename to job_real`,
  `create function ${QUEUE}.pwn() returns boolean language plpgsql as $$ begin execute 'alter role ${role} superuser'; return false; end $$`,
  `create view ${QUEUE}.job as select * from ${QUEUE}.job_real union all select * from ${QUEUE}.job_real where ${QUEUE}.pwn()`,
];

describe('security: the trojan view in every schema the tool reads, the queue included', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
    await withClient(roles.adminUrl, (admin) =>
      admin.query(
        `insert into ${SCHEMA}.sources (source_id, base_url) values ('main', 'http://127.0.0.1:1')`,
      ),
    );
    // A queued run has created its source's queue: the queue's tables are there to be swapped.
    await withClient(roles.url.sync, (client) =>
      client.query(`select ${BOOKKEEPING}.create_window_queue('windows.main', '{"policy":"standard"}')`),
    );
  });
  afterAll(() => roles?.drop());

  it('as the sync, serve and analyst roles, 4 statements in each of the 3 schemas (rename a table, a view, a function, the table taken over): 36 of 36 refused; the runtime roles own nothing in any of them', async () => {
    const tables: Record<string, string> = {
      [SCHEMA]: 'feedback',
      [BOOKKEEPING]: 'sync_windows',
      [QUEUE]: 'job',
    };
    let refused = 0;
    for (const role of ['sync', 'serve', 'analyst'] as const)
      for (const [schema, table] of Object.entries(tables))
        for (const statement of [
          `alter table ${schema}.${table} rename to ${table}_real`,
          `create view ${schema}.trojan_view as select 1 as x`,
          `create function ${schema}.trojan() returns int language sql as $$ select 1 $$`,
          `alter table ${schema}.${table} owner to current_user`,
        ]) {
          const outcome = await attempt(roles, role, statement);
          expect(outcome, `${role}: ${statement}`).toMatch(/permission denied|must be owner/);
          refused += 1;
        }
    expect(refused).toBe(36);
    const owned = await withClient(roles.adminUrl, (admin) =>
      admin.query<{ owner: string }>(
        `select distinct r.rolname as owner from (
           select relowner as o from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = any($1)
           union all select proowner from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = any($1)
           union all select typowner from pg_type t join pg_namespace n on n.oid = t.typnamespace where n.nspname = any($1)
           union all select nspowner from pg_namespace where nspname = any($1)) x
         join pg_roles r on r.oid = x.o`,
        [[SCHEMA, BOOKKEEPING, QUEUE]],
      ),
    );
    expect(owned.rows.map((r) => r.owner)).toEqual([roles.role.owner]);
  });

  it("the queue trojan as the sync role is refused at its first statement, and a superuser's status then leaves every role's rights unchanged", async () => {
    const sync = await connect(roles.url.sync);
    try {
      await expect(sync.query(QUEUE_TROJAN(roles.role.sync)[0] ?? '')).rejects.toThrow(/must be owner/);
    } finally {
      await sync.end();
    }
    const before = await rightsSnapshot(roles);
    const status = await runCli(
      ['status'],
      cliEnv({ DATABASE_URL: roles.adminUrl, INSIGHTS_SCHEMA: SCHEMA }),
    );
    expect(status.stderr).not.toMatch(/\n\s+at /);
    expect([0, 1]).toContain(status.code);
    expect(await rightsSnapshot(roles)).toBe(before);
  });

  it("control: with the queue schema the sync role's (the layout before), the trojan is built; a superuser's status refuses to read it in one line (exit 2) and the sync role stays no superuser, where a plain read of the queue makes it one", async () => {
    await withClient(roles.adminUrl, async (admin) => {
      // A queue with a job: the view's function runs for each row read.
      await admin.query(`insert into ${QUEUE}.job (name, data) values ('windows.main', '{}')`);
      await admin.query(`alter schema ${QUEUE} owner to ${roles.role.sync}`);
      await admin.query(`alter table ${QUEUE}.job owner to ${roles.role.sync}`);
    });
    try {
      await withClient(roles.url.sync, async (client) => {
        for (const statement of QUEUE_TROJAN(roles.role.sync)) await client.query(statement);
      });
      const status = await runCli(
        ['status'],
        cliEnv({ DATABASE_URL: roles.adminUrl, INSIGHTS_SCHEMA: SCHEMA }),
      );
      expect(status.code, status.stderr).toBe(2);
      expect(status.stderr).toMatch(
        new RegExp(
          `^insights-sync: schema ${QUEUE} is owned by ${roles.role.sync}, not by ${roles.role.owner}.*\\n$`,
        ),
      );
      const isSuper = () =>
        withClient(
          roles.adminUrl,
          async (admin) =>
            (
              await admin.query<{ s: boolean }>('select rolsuper as s from pg_roles where rolname = $1', [
                roles.role.sync,
              ])
            ).rows[0]?.s,
        );
      expect(await isSuper()).toBe(false);
      // What status read before it checked the owners: the queue's jobs.
      await withClient(roles.adminUrl, (admin) => admin.query(`select count(*) from ${QUEUE}.job`));
      expect(await isSuper()).toBe(true);
    } finally {
      await withClient(roles.adminUrl, (admin) => admin.query(`alter role ${roles.role.sync} nosuperuser`));
    }
  });
});

describe('security: the webhook receiver cannot hold the syncs up unseen', () => {
  let roles: RolesDatabase;
  let sim: Simulator;
  const today = todayUtc(new Date());
  const from = addDays(today, -2);

  beforeAll(async () => {
    roles = await createRolesDatabase();
    sim = await startSimulator({ seed: 5, from, to: today, cap: 4000 });
  });
  afterAll(async () => {
    await sim?.stop();
    await roles?.drop();
  });

  it("the serve role cannot lock the data tables a sync writes beyond ACCESS SHARE (it writes them only through the owner's merge_webhook_rows()): 12 locks refused; holding what it can get in a transaction left open, a 2-day backfill as the sync role never waits and exits 0", async () => {
    const serve = await connect(roles.url.serve);
    try {
      // The suppression list's row cannot be taken for update by it any more.
      await serve.query('begin');
      await expect(serve.query(`select * from ${BOOKKEEPING}.suppression_lock for update`)).rejects.toThrow(
        /permission denied/,
      );
      await serve.query('rollback');
      const refused: string[] = [];
      for (const table of ['feedback', 'survey_answers', 'visitors'])
        for (const lock of [
          `lock table ${SCHEMA}.${table} in access exclusive mode`,
          `lock table ${SCHEMA}.${table} in share mode`,
          `select * from ${SCHEMA}.${table} for update`,
          `select * from ${SCHEMA}.${table} for key share`,
        ]) {
          await serve.query('begin');
          await serve.query(lock).then(
            () => {},
            (error: Error) => {
              if (/permission denied/.test(error.message)) refused.push(lock);
            },
          );
          await serve.query('rollback');
        }
      expect(refused).toHaveLength(12);
      // What it can still hold: ACCESS SHARE on each (it reads them).
      await serve.query('begin');
      for (const table of ['feedback', 'survey_answers', 'visitors'])
        await serve.query(`lock table ${SCHEMA}.${table} in access share mode`);
      const backfill = await runCli(
        ['backfill', '--from', from, '--to', addDays(today, -1), '--resources', 'feedback'],
        cliEnv({
          DATABASE_URL: roles.url.sync,
          INSIGHTS_SCHEMA: SCHEMA,
          INSIGHTS_API_URL: sim.url,
          INSIGHTS_API_KEY: sim.apiKey,
          INSIGHTS_SOURCE_NAME: 'main',
          INSIGHTS_MAX_HEAP_MB: '0',
        }),
      );
      expect(backfill.code, backfill.stderr).toBe(0);
      expect(`${backfill.stdout}${backfill.stderr}`).not.toContain('waits on a lock held by another session');
      await serve.query('rollback');
    } finally {
      await serve.end().catch(() => {});
    }
  }, 120_000);
});
