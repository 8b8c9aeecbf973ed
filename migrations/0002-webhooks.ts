import { type Kysely, sql } from 'kysely';

/**
 * The webhook receiver (spec section 6). Frozen once shipped, like 0001.
 *
 * - feedback and survey_answers get `origin`: which path has seen the row. 'webhook' rows are
 *   provisional (no dt, url, rating yet); the API sync turns them into 'both' and fills them.
 * - webhook_events keeps every accepted delivery, applied or rejected, once per distinct body.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const now = sql`now()`;

export async function up(db: AnyDb): Promise<void> {
  for (const table of ['feedback', 'survey_answers']) {
    // Every row loaded before this migration came from the API.
    await db.schema
      .alterTable(table)
      .addColumn('origin', 'text', (c) =>
        c.notNull().defaultTo('api').check(sql`origin in ('api', 'webhook', 'both')`),
      )
      .execute();
  }

  await db.schema
    .createTable('webhook_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('source_id', 'text', (c) => c.notNull().references('sources.source_id'))
    // sha256 of the body's canonical JSON (keys sorted): a redelivery is the same row.
    .addColumn('body_hash', 'text', (c) => c.notNull())
    // The body's `type` as sent (untrusted: any string, or null when it has none).
    .addColumn('type', 'text')
    // 'applied': written to the tables; 'rejected': kept for inspection only (see `error`).
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('applied', 'rejected')`))
    .addColumn('error', 'text')
    // The parsed body. A body PostgreSQL cannot hold as jsonb (a \u0000 or an unpaired surrogate
    // in a string) is kept as JSON text in body_text instead; exactly one of the two is set.
    .addColumn('body', 'jsonb')
    .addColumn('body_text', 'text')
    .addColumn('received_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('last_received_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    // Deliveries of this very body (the service may send one more than once).
    .addColumn('delivery_count', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('applied_at', 'timestamptz')
    .addUniqueConstraint('webhook_events_source_body_key', ['source_id', 'body_hash'])
    .addCheckConstraint('webhook_events_one_body', sql`(body is null) <> (body_text is null)`)
    .execute();
  await db.schema
    .createIndex('webhook_events_received_idx')
    .on('webhook_events')
    .columns(['source_id', 'received_at'])
    .execute();
  // status and the reconciliation report look for provisional rows only: keep that cheap.
  for (const table of ['feedback', 'survey_answers']) {
    await db.schema
      .createIndex(`${table}_provisional_idx`)
      .on(table)
      .columns(['source_id', 'first_seen_at'])
      .where(sql.ref('origin'), '=', 'webhook')
      .execute();
  }
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('webhook_events').execute();
  for (const table of ['feedback', 'survey_answers']) {
    await db.schema.dropIndex(`${table}_provisional_idx`).execute();
    await db.schema.alterTable(table).dropColumn('origin').execute();
  }
}
