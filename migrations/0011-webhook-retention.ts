import { type Kysely, sql } from 'kysely';

/**
 * Retention of stored webhook bodies (INSIGHTS_WEBHOOK_RETENTION_DAYS). Frozen once
 * shipped, like the others.
 *
 * A body older than the retention is cleared, its row kept: the row with its body_hash is what
 * makes a redelivery of that body a duplicate (same answer, nothing applied twice), so it must
 * outlive the body. `body_cleared_at` says when; a cleared row holds neither body nor body_text.
 * A partial index finds the bodies still held by age, so each batch of the clearing reads only
 * what it clears.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('webhook_events').addColumn('body_cleared_at', 'timestamptz').execute();
  await db.schema.alterTable('webhook_events').dropConstraint('webhook_events_one_body').execute();
  await db.schema
    .alterTable('webhook_events')
    .addCheckConstraint(
      'webhook_events_one_body',
      sql`case when body_cleared_at is null then (body is null) <> (body_text is null)
               else body is null and body_text is null end`,
    )
    .execute();
  await db.schema
    .createIndex('webhook_events_body_age_idx')
    .on('webhook_events')
    .column('received_at')
    .where(sql.ref('body_cleared_at'), 'is', null)
    .execute();
  for (const [column, comment] of COMMENTS.up)
    await sql`comment on column webhook_events.${sql.id(column)} is ${sql.lit(comment)}`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropIndex('webhook_events_body_age_idx').execute();
  await db.schema.alterTable('webhook_events').dropConstraint('webhook_events_one_body').execute();
  // The body is gone for good: JSON null stands for it, so the row (and its dedupe key) stays.
  await sql`update webhook_events set body = 'null'::jsonb where body_cleared_at is not null`.execute(db);
  await db.schema
    .alterTable('webhook_events')
    .addCheckConstraint('webhook_events_one_body', sql`(body is null) <> (body_text is null)`)
    .execute();
  await db.schema.alterTable('webhook_events').dropColumn('body_cleared_at').execute();
  for (const [column, comment] of COMMENTS.down)
    await sql`comment on column webhook_events.${sql.id(column)} is ${sql.lit(comment)}`.execute(db);
}

const COMMENTS = {
  up: [
    [
      'body',
      'The body (JSON); null when it is kept in body_text instead, or cleared after the retention (body_cleared_at).',
    ],
    [
      'body_text',
      'The body as JSON text, when PostgreSQL cannot hold it as jsonb (a \\u0000 or an unpaired surrogate in a string); null otherwise.',
    ],
    [
      'body_cleared_at',
      'When the body was cleared after INSIGHTS_WEBHOOK_RETENTION_DAYS; null while it is kept. The row and its body_hash stay, so a redelivery is still recognised.',
    ],
  ],
  down: [
    ['body', 'The body (JSON); null when it is kept in body_text instead.'],
    [
      'body_text',
      'The body as JSON text, when PostgreSQL cannot hold it as jsonb (a \\u0000 or an unpaired surrogate in a string); null otherwise.',
    ],
  ],
} as const;
