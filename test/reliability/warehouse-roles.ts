import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createDatabase, databaseUrl, dropDatabase, withClient } from '../../scripts/dev-database/admin.js';
import { createDb, createPool } from '../../src/db/connection.js';
import { migrateToLatest } from '../../src/db/migrator.js';
import type { TestDatabase } from '../helpers/database.js';
import { databaseServerUrl } from '../helpers/database.js';

/**
 * A database set up by docs/roles.sql as written, only the role names made unique (roles are
 * shared by the whole server, and other test files run at the same time), migrated by the owner
 * role, the receiver's grants given: what an operator has after following the file.
 */

export const ROLES_SCRIPT = readFileSync(
  fileURLToPath(new URL('../../docs/roles.sql', import.meta.url)),
  'utf8',
);
export const SCHEMA = 'insights';
const ROLE_NAMES = [
  'insights_owner',
  'insights_sync',
  'insights_serve',
  'insights_analyst',
  'insights_monitor',
] as const;
export type RoleName = 'owner' | 'sync' | 'serve' | 'analyst' | 'monitor';

export interface RolesDatabase {
  adminUrl: string;
  /** The unique name of each role of the script. */
  role: Record<RoleName, string>;
  /** A login of each role (for the analyst and the monitor: a member of the group, as the file says to create). */
  url: Record<RoleName, string>;
  password: string;
  tag: string;
  /** The warehouse as a role sees it (search_path at the schema). */
  as(role: RoleName): TestDatabase;
  drop(): Promise<void>;
}

/** Runs the script; `migrate: false` leaves the schema empty (as before the first `migrate`). */
export async function createRolesDatabase(options: { migrate?: boolean } = {}): Promise<RolesDatabase> {
  const tag = randomBytes(3).toString('hex');
  const password = randomBytes(12).toString('hex');
  const database = `insights_roles_${tag}`;
  const role = {
    owner: `insights_owner_${tag}`,
    sync: `insights_sync_${tag}`,
    serve: `insights_serve_${tag}`,
    analyst: `insights_analyst_${tag}`,
    monitor: `insights_monitor_${tag}`,
  };
  const analystLogin = `alice_${tag}`;
  const monitorLogin = `bob_${tag}`;
  let script = ROLES_SCRIPT;
  for (const name of ROLE_NAMES) script = script.replaceAll(name, `${name}_${tag}`);
  const server = databaseServerUrl();
  await withClient(server, (admin) => createDatabase(admin, database));
  const adminUrl = databaseUrl(server, database);
  await withClient(adminUrl, async (admin) => {
    await admin.query(script);
    for (const name of [role.owner, role.sync, role.serve])
      await admin.query(`alter role ${name} password '${password}'`);
    await admin.query(`create role ${analystLogin} login password '${password}' in role ${role.analyst}`);
    await admin.query(`create role ${monitorLogin} login password '${password}' in role ${role.monitor}`);
  });
  const login = (name: string) => {
    const parsed = new URL(adminUrl);
    parsed.username = name;
    parsed.password = password;
    return parsed.toString();
  };
  const url = {
    owner: login(role.owner),
    sync: login(role.sync),
    serve: login(role.serve),
    analyst: login(analystLogin),
    monitor: login(monitorLogin),
  };
  const opened: TestDatabase[] = [];
  const as = (name: RoleName): TestDatabase => {
    const pool = createPool({
      url: url[name],
      schema: SCHEMA,
      applicationName: `insights-sync-tests-${name}`,
    });
    const t: TestDatabase = {
      url: url[name],
      schema: SCHEMA,
      pool,
      db: createDb(pool),
      drop: async () => {},
    };
    opened.push(t);
    return t;
  };
  if (options.migrate !== false) await migrateAsOwner({ url, as });
  return {
    adminUrl,
    role,
    url,
    password,
    tag,
    as,
    async drop() {
      for (const t of opened) await t.db.destroy().catch(() => {});
      await withClient(server, async (admin) => {
        await dropDatabase(admin, database);
        for (const name of [
          monitorLogin,
          analystLogin,
          role.monitor,
          role.analyst,
          role.serve,
          role.sync,
          role.owner,
        ])
          await admin.query(`drop role if exists ${name}`);
      });
    },
  };
}

/** `insights-sync migrate` as the owner, then the receiver's grants (docs/roles.sql, step 4). */
export async function migrateAsOwner(roles: Pick<RolesDatabase, 'url' | 'as'>): Promise<string[]> {
  const owner = roles.as('owner');
  const outcome = await migrateToLatest(owner.db, SCHEMA);
  if (outcome.error !== undefined) throw new Error('migrate as the owner failed', { cause: outcome.error });
  await withClient(roles.url.owner, (client) => client.query(`select ${SCHEMA}.grant_serve()`));
  return outcome.applied;
}
