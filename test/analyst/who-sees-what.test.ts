/**
 * docs/analysts.md, "Who sees what", is what the roles of docs/roles.sql can read: every relation
 * its table names is readable by the groups it says, and by no other: a login of each group, on a
 * plain connection to a warehouse the script set up, selects from it or is refused.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { BOOKKEEPING_TABLES } from '../helpers/bookkeeping-tables.js';
import { createRolesDatabase, type RolesDatabase, SCHEMA } from '../reliability/warehouse-roles.js';

interface Row {
  names: string[];
  bookkeeping: boolean;
  analyst: boolean;
  monitor: boolean;
}

/** The rows of the doc's table, each with the relations it names in backticks. */
function documented(): Row[] {
  const text = readFileSync(new URL('../../docs/analysts.md', import.meta.url), 'utf8');
  const section = text.slice(text.indexOf('## Who sees what'), text.indexOf('## With dbt'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| what') && !line.startsWith('|---'))
    .map((line) => {
      const cells = line.split('|').map((cell) => cell.trim());
      return {
        names: [...(cells[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1] as string),
        bookkeeping: cells[2] === 'bookkeeping',
        analyst: cells[3] === 'yes',
        monitor: cells[4] === 'yes',
      };
    });
}

describe('who sees what, as docs/analysts.md says', () => {
  let roles: RolesDatabase;

  beforeAll(async () => {
    roles = await createRolesDatabase();
  }, 120_000);
  afterAll(async () => {
    await roles?.drop();
  });

  /** Whether a login of the group reads the relation, on a plain connection of its own. */
  const canRead = async (role: 'analyst' | 'monitor', schema: string, relation: string) => {
    try {
      await sql`select from ${sql.table(`${schema}.${relation}`)} limit 0`.execute(roles.as(role).db);
      return true;
    } catch {
      return false;
    }
  };

  it('names rejects, webhook deliveries, drift, late arrivals and reading changes, and who reads them', () => {
    const named = documented().flatMap((row) => row.names);
    for (const name of ['rejects', 'webhook_events', 'schema_drift', 'late_arrivals', 'reading_changes'])
      expect(named).toContain(name);
  });

  it('every relation it names is readable by exactly the groups it says', async () => {
    const rows = documented();
    expect(rows.length).toBeGreaterThan(5);
    for (const row of rows)
      for (const name of row.names) {
        const schema = row.bookkeeping ? bookkeepingSchema(SCHEMA) : SCHEMA;
        if (row.bookkeeping) expect(BOOKKEEPING_TABLES, name).toContain(name);
        expect(await canRead('analyst', schema, name), `analyst reads ${name}`).toBe(row.analyst);
        expect(await canRead('monitor', schema, name), `monitor reads ${name}`).toBe(row.monitor);
      }
  });
});
