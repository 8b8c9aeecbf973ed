import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { inDbTransaction } from '../db/transaction.js';
import { InsightsError } from '../errors.js';
import type { PiiPolicy } from '../schemas/pii.js';
import { hmac, storedVisitorId } from './pii.js';
import { addSuppressions, lockSuppressionList, type Suppression } from './suppression.js';

export interface ForgetRequest {
  /** The visitor's id as the service knows it (spec 2.6 visitor.id). */
  visitorId: string;
  /** Only this source; default every source (stored or configured). */
  source?: string;
  /**
   * INSIGHTS_PII_KEY: under pii hash and drop the warehouse holds the HMAC of the id, so the
   * id is looked for both as given and as its HMAC.
   */
  piiKey?: string;
  /**
   * The configured sources and their pii setting: it decides which form of the id goes on a
   * source's suppression list. For a source not listed here the form its rows hold is used, or,
   * when it holds none, the HMAC if piiKey is set (the clear id otherwise).
   */
  sources?: readonly { name: string; pii?: PiiPolicy }[];
  /**
   * An id that matches no row and is on no suppression list yet: `suppress` lists it all the
   * same (a visitor not loaded yet), `refuse` changes nothing and throws VisitorUnseenError (a
   * typo in an erasure request must not pass for done). Default `suppress`.
   */
  unseen?: 'suppress' | 'refuse';
}

/** forget with `unseen: 'refuse'` of an id no row and no suppression list holds: nothing changed. */
export class VisitorUnseenError extends InsightsError {}

/** Rows deleted, per table. */
export interface ForgetResult {
  visitors: number;
  feedback: number;
  survey_answers: number;
  webhook_events: number;
  rejects: number;
  key_collisions: number;
}

export interface ForgetOutcome {
  deleted: ForgetResult;
  /** The suppression list entries the visitor has now (one per source). */
  suppressed: Suppression[];
}

/**
 * An erasure request: in one transaction, deletes the visitor and every row of theirs (their
 * feedback and survey answers by visitor_id; the webhook deliveries, rejected items and
 * set-aside key collisions whose visitor object carries the id) and puts the visitor on the
 * suppression list of each source (src/privacy/suppression.ts), so that no later sync or webhook
 * delivery stores them again. Recordings name no visitor (spec 2.5) and are not touched.
 */
export async function forget(db: Kysely<Database>, request: ForgetRequest): Promise<ForgetOutcome> {
  const clear = request.visitorId;
  const pseudonym = request.piiKey === undefined ? undefined : hmac(request.piiKey, clear);
  const ids = pseudonym === undefined ? [clear] : [clear, pseudonym];
  const source = request.source;
  return inDbTransaction(db, async (trx) => {
    // First: a sync window or webhook batch writing this visitor right now commits before the
    // deletes below, and one starting now reads the list after this transaction commits.
    await lockSuppressionList(trx);
    const stored = await storedForms(trx, ids, source);
    const idList = sql.join(ids.map((id) => sql`${id}`));

    const feedback = await trx
      .deleteFrom('feedback')
      .where('visitor_id', 'in', ids)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .executeTakeFirst();
    const surveyAnswers = await trx
      .deleteFrom('survey_answers')
      .where('visitor_id', 'in', ids)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .executeTakeFirst();
    const visitors = await trx
      .deleteFrom('visitors')
      .where('id', 'in', ids)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .executeTakeFirst();
    const rejects = await trx
      .deleteFrom('rejects')
      .where(sql<boolean>`item->'visitor'->>'id' in (${idList})`)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .executeTakeFirst();
    const collisions = await trx
      .deleteFrom('key_collisions')
      .where(sql<boolean>`raw->'visitor'->>'id' in (${idList})`)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .executeTakeFirst();
    // A body jsonb could not hold is JSON text (body_text): few rows, read and matched here.
    const unstorable = await trx
      .selectFrom('webhook_events')
      .select(['id', 'body_text'])
      .where('body_text', 'is not', null)
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .execute();
    const textMatches = unstorable.filter((row) => ids.includes(visitorIdOf(row.body_text)));
    const events = await trx
      .deleteFrom('webhook_events')
      .where((eb) =>
        eb.or([
          sql<boolean>`body->'visitor'->>'id' in (${idList})`,
          ...(textMatches.length > 0
            ? [
                eb(
                  'id',
                  'in',
                  textMatches.map((row) => row.id),
                ),
              ]
            : []),
        ]),
      )
      .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
      .executeTakeFirst();

    const targets = source !== undefined ? [source] : await everySource(trx, request.sources ?? []);
    const policies = new Map(
      (request.sources ?? []).map((s) => [s.name, s.pii ?? { mode: 'keep' as const }]),
    );
    const suppressed = targets.map((sourceId): Suppression => {
      const policy = policies.get(sourceId);
      if (policy !== undefined)
        return { sourceId, visitorId: storedVisitorId(clear, policy), hashed: policy.mode !== 'keep' };
      // Not configured here: the form its rows held, else the pseudonym whenever one can be made.
      const forms = stored.get(sourceId);
      const hashed =
        pseudonym !== undefined && (forms?.has(pseudonym) === true || forms?.has(clear) !== true);
      return { sourceId, visitorId: hashed ? (pseudonym as string) : clear, hashed };
    });
    const deleted: ForgetResult = {
      visitors: count(visitors),
      feedback: count(feedback),
      survey_answers: count(surveyAnswers),
      webhook_events: count(events),
      rejects: count(rejects),
      key_collisions: count(collisions),
    };
    if (request.unseen === 'refuse' && isUnseen(deleted) && !(await isListed(trx, ids, source)))
      // Thrown inside the transaction: nothing above is kept.
      throw new VisitorUnseenError(
        `no row of this visitor in ${source === undefined ? 'any source' : `source ${source}`}, and not on a suppression list: nothing deleted, nothing listed. Check the id${request.piiKey === undefined ? ' (and set INSIGHTS_PII_KEY if a source hashes visitor ids)' : ''}; to keep a visitor not loaded yet out of every later sync, run again with --not-seen-yet`,
      );
    await addSuppressions(trx, suppressed);
    return { deleted, suppressed };
  });
}

/** forget, answering with the rows deleted per table (the suppression entries are added too). */
export async function forgetVisitor(db: Kysely<Database>, request: ForgetRequest): Promise<ForgetResult> {
  return (await forget(db, request)).deleted;
}

function isUnseen(deleted: ForgetResult): boolean {
  return Object.values(deleted).every((n) => n === 0);
}

/** Whether any of `ids` is on a suppression list already (forgotten before: no row is left). */
async function isListed(
  trx: Kysely<Database>,
  ids: readonly string[],
  source: string | undefined,
): Promise<boolean> {
  const row = await trx
    .selectFrom('suppressed_visitors')
    .select('visitor_id')
    .where('visitor_id', 'in', ids)
    .$call((qb) => (source === undefined ? qb : qb.where('source_id', '=', source)))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Per source, which of `ids` (the clear id, its pseudonym) its visitor and item rows hold. */
async function storedForms(
  trx: Kysely<Database>,
  ids: readonly string[],
  source: string | undefined,
): Promise<Map<string, Set<string>>> {
  const rows = await sql<{ source_id: string; id: string }>`
    select source_id, id from visitors where id in (${sql.join(ids)})
    union select source_id, visitor_id from feedback where visitor_id in (${sql.join(ids)})
    union select source_id, visitor_id from survey_answers where visitor_id in (${sql.join(ids)})`.execute(
    trx,
  );
  const forms = new Map<string, Set<string>>();
  for (const row of rows.rows) {
    if (source !== undefined && row.source_id !== source) continue;
    const set = forms.get(row.source_id) ?? new Set<string>();
    set.add(row.id);
    forms.set(row.source_id, set);
  }
  return forms;
}

/** Every source the warehouse has rows of, and every configured one (maybe not synced yet). */
async function everySource(
  trx: Kysely<Database>,
  configured: readonly { name: string }[],
): Promise<string[]> {
  const rows = await trx.selectFrom('sources').select('source_id').execute();
  return [...new Set([...rows.map((row) => row.source_id), ...configured.map((s) => s.name)])].sort();
}

function count(result: { numDeletedRows: bigint } | undefined): number {
  return Number(result?.numDeletedRows ?? 0n);
}

function visitorIdOf(text: string | null): string {
  try {
    const body: unknown = JSON.parse(text ?? 'null');
    const visitor =
      typeof body === 'object' && body !== null ? (body as { visitor?: unknown }).visitor : null;
    const id = typeof visitor === 'object' && visitor !== null ? (visitor as { id?: unknown }).id : null;
    return typeof id === 'string' ? id : '';
  } catch {
    return '';
  }
}
