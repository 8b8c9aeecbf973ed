import { CompiledQuery } from 'kysely';
import { type LoadTransaction, preparedStatement } from '../db/transaction.js';
import type { Visitor } from '../schemas/visitor.js';
import type { FeedbackWebhook, SurveyWebhook, WebhookBody } from '../schemas/webhook.js';
import type { ColumnOf } from './upsert.js';
import { visitorRow } from './visitors.js';

/** What merging one webhook body did to its row. */
export type MergeEffect = 'inserted' | 'filled' | 'unchanged';

export interface WebhookMerge {
  row: MergeEffect;
  visitor: 'inserted' | 'unchanged';
}

type MergeTable = 'feedback' | 'survey_answers';
/** A column's value; raw is the body itself (a jsonb column, sent as JSON, never as text). */
type MergeValue = string | number | WebhookBody;

interface MergeRowOf<T extends MergeTable> {
  table: T;
  key: Partial<Record<ColumnOf<T>, number>>;
  /** Columns the body carries; dt, url, rating and rating_text never come in a webhook (spec 6). */
  values: Partial<Record<ColumnOf<T>, MergeValue>>;
  /** When the delivery was received; null: now (the receiver stores it in the receipt's transaction). */
  receivedAt: Date | null;
  /** See MergeBody.rawFrom; null: raw travels as itself. */
  rawFrom: number | null;
}

/** A valid body to merge, as planWebhookMerge takes it. */
export interface MergeBody {
  sourceId: string;
  body: WebhookBody;
  /** A stored delivery's receipt (`webhooks replay`); default now. */
  receivedAt?: Date;
  /**
   * The body's index among the deliveries its statement stores (receive_webhook_batch(),
   * migration 0042): raw (the body, its visitor) travels as that index, the body once.
   */
  rawFrom?: number;
}

/**
 * Merges one valid webhook body (spec 6) into the tables the API sync fills, the API being
 * authoritative:
 * - an unknown key becomes a provisional row: origin 'webhook', dt/url/rating null, raw = the body,
 *   webhook_received_at = the delivery's receipt (its provisional day in the daily views: the
 *   bodies carry no time of the item itself);
 * - a known row only gets the columns that are still null, and origin 'api' becomes 'both';
 * - a value already there (the API's, or an earlier webhook's) is never changed, and a row with
 *   nothing to change is not written at all.
 * The visitor is inserted when unknown and otherwise left alone: the API's copy wins (a webhook
 * has no dt; src/load/visitors.ts). A visitor inserted for a row that already names another
 * visitor (the API's copy came first) is removed again: it would be an orphan.
 */
export async function mergeWebhookBody(
  trx: LoadTransaction,
  sourceId: string,
  body: WebhookBody,
  /** A stored delivery's receipt (`webhooks replay`); default now. */
  receivedAt?: Date,
): Promise<WebhookMerge> {
  const [merge] = await mergeWebhookBodies(trx, [{ sourceId, body, ...(receivedAt ? { receivedAt } : {}) }]);
  return merge as WebhookMerge;
}

/**
 * mergeWebhookBody for many bodies at once, in three statements whatever their number (visitors,
 * feedback, survey answers): the webhook receiver's micro-batches. The result is what merging
 * them one after the other in the given order would give: the first body of a key inserts or
 * fills its row, a later one fills only what is still null (nothing, as every column a body
 * carries is required), and the first delivery naming an unknown visitor inserts it.
 */
export async function mergeWebhookBodies(
  trx: LoadTransaction,
  bodies: readonly { sourceId: string; body: WebhookBody; receivedAt?: Date }[],
): Promise<WebhookMerge[]> {
  if (bodies.length === 0) return [];
  const planned = planWebhookMerge(bodies);
  // ONE statement for the visitors and both tables: each round trip to PostgreSQL costs both
  // processes a wake-up, on a busy machine as much as the statement's own work.
  const { rows: written } = await trx.db.executeQuery<WrittenRow>(
    CompiledQuery.raw(MERGE_STATEMENT, planned.parameters),
  );
  return finishWebhookMerge(planned, written);
}

/** mergeWebhookBodies' statement, planned: sent alone, or within the receiver's batch (webhook-batch.ts). */
export interface PlannedMerge {
  bodies: readonly { sourceId: string; body: WebhookBody }[];
  visitorPlan: VisitorPlan;
  tables: { indexes: number[]; plan: MergePlan }[];
  /** The visitors' rows, the feedback rows, the survey answers, as JSON arrays (`[]`: none). */
  parameters: string[];
}

/** What mergeWebhookBodies' statement will write, and its parameters (at least one body). */
export function planWebhookMerge(bodies: readonly MergeBody[]): PlannedMerge {
  const visitorPlan = planVisitors(
    bodies.map(({ sourceId, body, rawFrom }) => ({ sourceId, visitor: body.visitor, rawFrom })),
  );
  const rows = bodies.map(({ sourceId, body, receivedAt, rawFrom }) => ({
    ...(body.type === 'feedback' ? feedbackRow(sourceId, body) : surveyRow(sourceId, body)),
    receivedAt: receivedAt ?? null,
    rawFrom: rawFrom ?? null,
  }));
  const tables = (['feedback', 'survey_answers'] as const).flatMap((table) => {
    const indexes = rows.flatMap((row, i) => (row.table === table ? [i] : []));
    return indexes.length === 0
      ? []
      : [{ indexes, plan: planMerge(indexes.map((i) => rows[i] as MergeRow)) }];
  });
  const parameterOf = (table: MergeTable) =>
    tables.find(({ plan }) => plan.table === table)?.plan.parameter ?? '[]';
  return {
    bodies,
    visitorPlan,
    tables,
    parameters: [visitorPlan.parameter, parameterOf('feedback'), parameterOf('survey_answers')],
  };
}

/** What the merge's statement did to each body, from the rows it returned (others ignored). */
export function finishWebhookMerge(planned: PlannedMerge, written: readonly WrittenRow[]): WebhookMerge[] {
  const { bodies, visitorPlan, tables } = planned;
  const visitors = visitorEffects(visitorPlan, bodies.length, written);
  const effects: MergeEffect[] = new Array(bodies.length).fill('unchanged');
  for (const { indexes, plan } of tables) {
    const merged = mergeEffects(plan, written);
    indexes.forEach((i, n) => {
      effects[i] = merged[n] ?? 'unchanged';
    });
  }
  // A new row names its body's visitor; an existing one may name another (the API's): the
  // function then removed the visitor it had inserted, which nothing references.
  const removed = new Set(
    written
      .filter((row) => row.table === 'removed_visitors')
      .map((row) => JSON.stringify([row.source_id, String(row.id)])),
  );
  return effects.map((row, i) => {
    const { sourceId, body } = bodies[i] as { sourceId: string; body: WebhookBody };
    const gone = removed.has(JSON.stringify([sourceId, body.visitor.id]));
    return { row, visitor: gone ? 'unchanged' : (visitors[i] ?? 'unchanged') };
  });
}

function feedbackRow(
  sourceId: string,
  body: FeedbackWebhook,
): Omit<MergeRowOf<'feedback'>, 'receivedAt' | 'rawFrom'> {
  return {
    table: 'feedback',
    key: { id: body.id, feedback_id: body.feedback_id },
    values: {
      source_id: sourceId,
      question: body.question,
      session: body.session,
      comment: body.comment,
      screenshot: body.screenshot,
      visitor_id: body.visitor.id,
      raw: body,
    },
  };
}

function surveyRow(
  sourceId: string,
  body: SurveyWebhook,
): Omit<MergeRowOf<'survey_answers'>, 'receivedAt' | 'rawFrom'> {
  return {
    table: 'survey_answers',
    key: { id: body.id, question_id: body.question_id },
    values: {
      source_id: sourceId,
      question: body.question,
      session: body.session,
      // The survey webhook calls the answer `answer`; the list endpoint (and the table) `comment`.
      comment: body.answer,
      visitor_id: body.visitor.id,
      raw: body,
    },
  };
}

/** Columns a webhook never fills on an existing row: the key, and raw (the API's copy wins). */
const NEVER_FILLED = new Set(['source_id', 'raw']);

/** What mergeWebhookBodies' statement returns: a visitor it inserted, or a row it wrote. */
export interface WrittenRow {
  /** removed_visitors: a visitor the statement inserted and removed again, referenced by nothing. */
  table: 'visitors' | 'removed_visitors' | MergeTable;
  source_id: string;
  /** The visitor's id (visitors), or the row's id (feedback, survey_answers). */
  id: string | number;
  /** The key's second number: feedback_id or question_id; null for a visitor. */
  key2: number | null;
  inserted: boolean;
}

/** One table's rows as mergeWebhookBodies' statement writes them. */
export interface MergePlan {
  table: MergeTable;
  columns: string[];
  keyColumns: string[];
  filled: string[];
  /** The rows as one JSON array, combined by key and in key order. */
  parameter: string;
  rows: number;
  /** Each key's combined row and the index of its first row. */
  combined: Map<
    string,
    { values: Record<string, MergeValue>; receivedAt: Date | null; rawFrom: number | null; index: number }
  >;
}

type MergeRow = MergeRowOf<MergeTable>;

/**
 * Rows of one table, in key order (concurrent batches lock rows in one order and cannot
 * deadlock). Rows sharing a key are combined first, the earlier row's values winning (a
 * statement cannot touch one row twice); the later ones report 'unchanged'.
 */
function planMerge(rows: readonly MergeRow[]): MergePlan {
  const first = rows[0] as MergeRow;
  const keyColumns = ['source_id', ...Object.keys(first.key)];
  const columns = Object.keys({ ...first.values, ...first.key });
  const filled = columns.filter((c) => !keyColumns.includes(c) && !NEVER_FILLED.has(c));
  const valuesOf = (row: MergeRow) => ({ ...row.values, ...row.key }) as Record<string, MergeValue>;
  const combined: MergePlan['combined'] = new Map();
  rows.forEach((row, index) => {
    const values = valuesOf(row);
    const key = mergeKey(keyColumns, values);
    const earlier = combined.get(key);
    if (earlier === undefined)
      combined.set(key, { values, receivedAt: row.receivedAt, rawFrom: row.rawFrom, index });
    else for (const c of filled) earlier.values[c] ??= values[c] as MergeValue;
  });
  // The API loader's order (source_id, then the key's numbers): the two lock rows alike.
  const ordered = [...combined.values()].sort((a, b) =>
    compareKeys(
      keyColumns.map((c) => a.values[c]),
      keyColumns.map((c) => b.values[c]),
    ),
  );
  const parameter = JSON.stringify(
    ordered.map(({ values, receivedAt, rawFrom }) =>
      rawFrom === null
        ? { ...values, [RECEIVED_AT]: receivedAt }
        : { ...values, raw: undefined, [RAW_FROM]: rawFrom, [RECEIVED_AT]: receivedAt },
    ),
  );
  return { table: first.table, columns, keyColumns, filled, parameter, rows: rows.length, combined };
}

const mergeKey = (keyColumns: readonly string[], values: Record<string, unknown>) =>
  JSON.stringify(keyColumns.map((c) => values[c]));

/** Each row of the plan: inserted, filled, or unchanged (not written, or a later copy of a key). */
function mergeEffects(plan: MergePlan, written: readonly WrittenRow[]): MergeEffect[] {
  const effects: MergeEffect[] = new Array(plan.rows).fill('unchanged');
  const [, idColumn, key2Column] = plan.keyColumns as [string, string, string];
  for (const row of written) {
    if (row.table !== plan.table) continue;
    const values = { source_id: row.source_id, [idColumn]: Number(row.id), [key2Column]: row.key2 };
    const entry = plan.combined.get(mergeKey(plan.keyColumns, values));
    if (entry !== undefined) effects[entry.index] = row.inserted ? 'inserted' : 'filled';
  }
  return effects;
}

/** The column of a merge row's JSON that carries its receipt (null: now). */
const RECEIVED_AT = 'received_at';
/** The column of a merge row's JSON that names the delivery its raw is taken from (MergeBody.rawFrom). */
const RAW_FROM = 'raw_delivery';
/**
 * mergeWebhookBodies' statement, a named statement prepared once per connection: the owner's
 * merge_webhook_rows() (migration 0035) writes the visitors (through merge_visitors(), the API
 * load's visitor merge too: migration 0043), then the items, like the API load
 * (the same lock order avoids deadlocks). The receiver has no INSERT or UPDATE of its own on
 * those tables: the function is what applies "a webhook never overwrites a value already there",
 * for any caller. The rows travel as one jsonb parameter per table (a JSON array), so the text is
 * the same whatever their number. The receiver's usual batch calls it from receive_webhook_batch()
 * (src/load/webhook-batch.ts) instead.
 */
const MERGE_STATEMENT = preparedStatement(
  `select m.written_table as "table", m.source_id, m.id, m.key2, m.inserted
   from merge_webhook_rows($1::jsonb, $2::jsonb, $3::jsonb) as m`,
);

export interface VisitorPlan {
  /** The first entry naming each visitor, by [source, id]. */
  firstOf: Map<string, { index: number }>;
  parameter: string;
}

/** The visitors of the entries, each once, in key order (one lock order for concurrent batches). */
function planVisitors(
  entries: readonly { sourceId: string; visitor: Visitor; rawFrom: number | undefined }[],
): VisitorPlan {
  const firstOf = new Map<
    string,
    { sourceId: string; visitor: Visitor; rawFrom: number | undefined; index: number }
  >();
  entries.forEach((entry, index) => {
    const key = JSON.stringify([entry.sourceId, entry.visitor.id]);
    if (!firstOf.has(key)) firstOf.set(key, { ...entry, index });
  });
  const ordered = [...firstOf.values()].sort((a, b) =>
    compareKeys([a.sourceId, a.visitor.id], [b.sourceId, b.visitor.id]),
  );
  // Mapped by the one visitorRow; raw by reference when the body travels in the same statement.
  const parameter = JSON.stringify(
    ordered.map(({ sourceId, visitor, rawFrom }) =>
      rawFrom === undefined
        ? visitorRow(sourceId, visitor)
        : { ...visitorRow(sourceId, visitor), raw: undefined, [RAW_FROM]: rawFrom },
    ),
  );
  return { firstOf, parameter };
}

/**
 * The first entry naming a visitor the statement inserted reports 'inserted', every other one
 * 'unchanged'.
 */
function visitorEffects(plan: VisitorPlan, count: number, written: readonly WrittenRow[]) {
  const effects: ('inserted' | 'unchanged')[] = new Array(count).fill('unchanged');
  for (const row of written) {
    if (row.table !== 'visitors') continue;
    const entry = plan.firstOf.get(JSON.stringify([row.source_id, row.id]));
    if (entry !== undefined) effects[entry.index] = 'inserted';
  }
  return effects;
}

function compareKeys(a: readonly unknown[], b: readonly unknown[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as string | number;
    const y = b[i] as string | number;
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}
