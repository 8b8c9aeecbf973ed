import { type Kysely, sql } from 'kysely';

/**
 * Privacy controls (src/privacy/pii.ts): a source's `pii` setting keeps, hashes or drops the
 * personal data of visitors before anything is written. Frozen once shipped, like the others.
 *
 * - recordings.user_ip and user_agent may be null: `pii: drop` stores null there, as it does in
 *   the visitors columns (which were nullable from the start).
 * - The comments of the personal columns say what they hold under each setting.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const HASHED =
  "Personal data: as sent under the source's pii setting keep; the hex HMAC-SHA-256 of the value under hash; null under drop.";

const COMMENTS: Record<string, Record<string, string>> = {
  visitors: {
    id: "Visitor identifier (spec 2.6). feedback.visitor_id and survey_answers.visitor_id refer to it. Under the source's pii setting hash or drop, the hex HMAC-SHA-256 of the service's id (a pseudonym: it still joins and counts).",
    name: `Name of the visitor (spec 2.6). ${HASHED}`,
    email: `Email address of the visitor (spec 2.6). ${HASHED}`,
    ip: `IP address of the visitor (spec 2.6). ${HASHED}`,
    user_agent: `User agent of the visitor (spec 2.6). ${HASHED}`,
  },
  recordings: {
    user_ip: `IP address of the visitor (spec 2.5). ${HASHED}`,
    user_agent: `User agent of the visitor (spec 2.5). ${HASHED}`,
  },
};

export async function up(db: AnyDb): Promise<void> {
  for (const column of ['user_ip', 'user_agent']) {
    await db.schema
      .alterTable('recordings')
      .alterColumn(column, (c) => c.dropNotNull())
      .execute();
  }
  for (const [table, columns] of Object.entries(COMMENTS)) {
    for (const [column, comment] of Object.entries(columns)) {
      await sql`comment on column ${sql.ref(`${table}.${column}`)} is ${sql.lit(comment)}`.execute(db);
    }
  }
}

export async function down(db: AnyDb): Promise<void> {
  // Rows written under pii: drop hold nulls there; they must go before the constraint comes back.
  await sql`delete from recordings where user_ip is null or user_agent is null`.execute(db);
  for (const column of ['user_ip', 'user_agent']) {
    await db.schema
      .alterTable('recordings')
      .alterColumn(column, (c) => c.setNotNull())
      .execute();
  }
}
