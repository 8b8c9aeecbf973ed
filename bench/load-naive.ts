/**
 * The techniques the loader did not choose, written as one would write them with Kysely, for
 * the comparison in docs/benchmarks.md: multi-row VALUES upserts, and row by row (the naive
 * baseline, target 6). Both keep the warehouse's transactions (one per window) and skip
 * rewriting an unchanged row, so only the technique differs.
 */
import { type Insertable, type Kysely, sql } from 'kysely';
import type pg from 'pg';
import type { Database } from '../src/db/database.js';
import type { FeedbackTable } from '../src/db/tables/feedback.js';
import type { VisitorsTable } from '../src/db/tables/visitors.js';
import { inTransaction } from '../src/db/transaction.js';
import { visitorRow } from '../src/load/visitors.js';
import type { Feedback } from '../src/schemas/feedback.js';

interface Window {
  items: Feedback[];
}

/** 1,000 rows of 13 columns: 13,000 parameters, well below PostgreSQL's 65,535. */
const ROWS_PER_STATEMENT = 1000;

function feedbackRow(sourceId: string, f: Feedback): Insertable<FeedbackTable> {
  return {
    source_id: sourceId,
    id: f.id,
    feedback_id: f.feedback_id,
    question: f.question,
    session: f.session,
    comment: f.comment,
    rating: f.rating,
    rating_text: f.rating_text,
    dt: f.dt,
    url: f.url,
    screenshot: f.screenshot,
    visitor_id: f.visitor.id,
    raw: JSON.stringify(f),
  };
}

/**
 * The visitors' upsert as the technique measured writes it: its own statement by design, not the
 * product's merge_visitors() (migration 0043), since what is measured is a VALUES upsert of 1,000
 * rows or of one row, and a call of that function would be the server-side merge the loader chose.
 * It keeps the last visitor written, not the most recent observation by dt: only the benchmark
 * runs it, each time into a fresh warehouse, and no product path writes visitors but that function.
 */
async function upsertVisitors(db: Kysely<Database>, rows: Insertable<VisitorsTable>[]): Promise<void> {
  await db
    .insertInto('visitors')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['source_id', 'id'])
        .doUpdateSet((eb) => ({
          name: eb.ref('excluded.name'),
          company: eb.ref('excluded.company'),
          email: eb.ref('excluded.email'),
          ip: eb.ref('excluded.ip'),
          user_agent: eb.ref('excluded.user_agent'),
          landing_page: eb.ref('excluded.landing_page'),
          ref_page: eb.ref('excluded.ref_page'),
          created_at: eb.ref('excluded.created_at'),
          device: eb.ref('excluded.device'),
          browser: eb.ref('excluded.browser'),
          os: eb.ref('excluded.os'),
          raw: eb.ref('excluded.raw'),
          last_changed_at: sql<Date>`now()`,
        }))
        .where(sql<boolean>`visitors.raw is distinct from excluded.raw`),
    )
    .execute();
}

async function upsertFeedback(db: Kysely<Database>, rows: Insertable<FeedbackTable>[]): Promise<void> {
  await db
    .insertInto('feedback')
    .values(rows)
    .onConflict((oc) =>
      oc
        .columns(['source_id', 'id', 'feedback_id'])
        .doUpdateSet((eb) => ({
          question: eb.ref('excluded.question'),
          session: eb.ref('excluded.session'),
          comment: eb.ref('excluded.comment'),
          rating: eb.ref('excluded.rating'),
          rating_text: eb.ref('excluded.rating_text'),
          dt: eb.ref('excluded.dt'),
          url: eb.ref('excluded.url'),
          screenshot: eb.ref('excluded.screenshot'),
          visitor_id: eb.ref('excluded.visitor_id'),
          raw: eb.ref('excluded.raw'),
          last_changed_at: sql<Date>`now()`,
        }))
        .where(sql<boolean>`feedback.raw is distinct from excluded.raw`),
    )
    .execute();
}

/** Each window: its distinct visitors, then its items, 1,000 rows per INSERT ... VALUES. */
export async function loadMultiRow(
  pool: pg.Pool,
  sourceId: string,
  windows: readonly Window[],
): Promise<void> {
  for (const window of windows) {
    await inTransaction(pool, async (trx) => {
      const visitors = new Map(window.items.map((f) => [f.visitor.id, f.visitor]));
      const visitorRows = [...visitors.values()].map((v) => visitorRow(sourceId, v));
      for (let i = 0; i < visitorRows.length; i += ROWS_PER_STATEMENT)
        await upsertVisitors(trx.db, visitorRows.slice(i, i + ROWS_PER_STATEMENT));
      const rows = window.items.map((f) => feedbackRow(sourceId, f));
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT)
        await upsertFeedback(trx.db, rows.slice(i, i + ROWS_PER_STATEMENT));
    });
  }
}

/** Each window: for each item, its visitor then the item, one upsert statement each. */
export async function loadRowByRow(
  pool: pg.Pool,
  sourceId: string,
  windows: readonly Window[],
): Promise<void> {
  for (const window of windows) {
    await inTransaction(pool, async (trx) => {
      for (const item of window.items) {
        await upsertVisitors(trx.db, [visitorRow(sourceId, item.visitor)]);
        await upsertFeedback(trx.db, [feedbackRow(sourceId, item)]);
      }
    });
  }
}
