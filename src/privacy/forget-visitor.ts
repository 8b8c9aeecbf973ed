import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import { hmac } from './pii.js';

export interface ForgetRequest {
  /** The visitor's id as the service knows it (spec 2.6 visitor.id). */
  visitorId: string;
  /** Only this source; default every source. */
  source?: string;
  /**
   * INSIGHTS_PII_KEY: under pii hash and drop the warehouse holds the HMAC of the id, so the
   * id is looked for both as given and as its HMAC.
   */
  piiKey?: string;
}

/** Rows deleted, per table. */
export interface ForgetResult {
  visitors: number;
  feedback: number;
  survey_answers: number;
  webhook_events: number;
  rejects: number;
}

/**
 * An erasure request: deletes, in one transaction, the visitor and every row of theirs: their
 * feedback and survey answers (by visitor_id), the webhook deliveries and the rejected items
 * whose visitor object carries the id. Recordings name no visitor (spec 2.5) and are not touched.
 */
export async function forgetVisitor(db: Kysely<Database>, request: ForgetRequest): Promise<ForgetResult> {
  const ids = [request.visitorId];
  if (request.piiKey !== undefined) ids.push(hmac(request.piiKey, request.visitorId));
  const source = request.source;
  return db.transaction().execute(async (trx) => {
    const feedback = await trx
      .deleteFrom('feedback')
      .where('visitor_id', 'in', ids)
      .$if(source !== undefined, (qb) => qb.where('source_id', '=', source as string))
      .executeTakeFirst();
    const surveyAnswers = await trx
      .deleteFrom('survey_answers')
      .where('visitor_id', 'in', ids)
      .$if(source !== undefined, (qb) => qb.where('source_id', '=', source as string))
      .executeTakeFirst();
    const visitors = await trx
      .deleteFrom('visitors')
      .where('id', 'in', ids)
      .$if(source !== undefined, (qb) => qb.where('source_id', '=', source as string))
      .executeTakeFirst();
    const idList = sql.join(ids.map((id) => sql`${id}`));
    const rejects = await trx
      .deleteFrom('rejects')
      .where(sql<boolean>`item->'visitor'->>'id' in (${idList})`)
      .$if(source !== undefined, (qb) => qb.where('source_id', '=', source as string))
      .executeTakeFirst();
    // A body jsonb could not hold is JSON text (body_text): few rows, read and matched here.
    const unstorable = await trx
      .selectFrom('webhook_events')
      .select(['id', 'body_text'])
      .where('body_text', 'is not', null)
      .$if(source !== undefined, (qb) => qb.where('source_id', '=', source as string))
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
      .$if(source !== undefined, (qb) => qb.where('source_id', '=', source as string))
      .executeTakeFirst();
    return {
      visitors: count(visitors),
      feedback: count(feedback),
      survey_answers: count(surveyAnswers),
      webhook_events: count(events),
      rejects: count(rejects),
    };
  });
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
