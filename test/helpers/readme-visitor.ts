import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/database.js';

/** The visitor id the README's privacy examples use. */
export const EXAMPLE_VISITOR = 'v0042-1a2b3c';

/**
 * A README command with its example visitor replaced by one the warehouse holds: `forget` refuses
 * an id no row holds (a typo is not an erasure), and the examples stand for a real request.
 */
export async function withStoredVisitor(command: string, db: Kysely<Database>): Promise<string> {
  if (!command.includes(EXAMPLE_VISITOR)) return command;
  const row = await db.selectFrom('visitors').select('id').orderBy('id').limit(1).executeTakeFirstOrThrow();
  return command.replaceAll(EXAMPLE_VISITOR, row.id);
}
