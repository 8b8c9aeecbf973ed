import { sql } from 'kysely';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import type { GroundTruth } from '../../src/simulator/server.js';
import type { TestDatabase } from './database.js';

/** Sorted, comparable projections of the warehouse and of the simulator's ground truth. */
export async function warehouseItems(t: TestDatabase, source = 'main') {
  const feedback = await t.db
    .selectFrom('feedback')
    .select(['raw'])
    .where('source_id', '=', source)
    .orderBy('id')
    .orderBy('feedback_id')
    .execute();
  const survey = await t.db
    .selectFrom('survey_answers')
    .select(['raw'])
    .where('source_id', '=', source)
    .orderBy('id')
    .orderBy('question_id')
    .execute();
  const recordings = await t.db
    .selectFrom('recordings')
    .select(['raw'])
    .where('source_id', '=', source)
    .orderBy('id')
    .execute();
  return {
    feedback: feedback.map((r) => r.raw),
    survey: survey.map((r) => r.raw),
    recordings: recordings.map((r) => r.raw),
  };
}

export function truthItems(truth: GroundTruth, range?: { from: string; to: string }) {
  const inRange = (item: { dt: string }) =>
    !range || (item.dt.slice(0, 10) >= range.from && item.dt.slice(0, 10) <= range.to);
  const byKey =
    <T>(key: (item: T) => (string | number)[]) =>
    (a: T, b: T) => {
      const ka = key(a);
      const kb = key(b);
      for (let i = 0; i < ka.length; i++) {
        const x = ka[i] as string | number;
        const y = kb[i] as string | number;
        if (x < y) return -1;
        if (x > y) return 1;
      }
      return 0;
    };
  return {
    feedback: truth.feedback.filter(inRange).sort(byKey((f) => [f.id, f.feedback_id])),
    survey: truth.survey.filter(inRange).sort(byKey((s) => [s.id, s.question_id])),
    recordings: truth.recordings.filter(inRange).sort(byKey((r) => [r.id])),
  };
}

/** n_tup_upd per table: Postgres' own count of updated tuples (pg_stat_xact is per transaction). */
export async function updateCounters(t: TestDatabase): Promise<Record<string, number>> {
  // Stats are flushed asynchronously; force them out so the reading is current.
  await sql`select pg_stat_force_next_flush()`.execute(t.db).catch(() => undefined);
  const rows = await sql<{ relname: string; n_tup_upd: number; n_tup_ins: number }>`
    select relname, n_tup_upd::int, n_tup_ins::int from pg_stat_user_tables where schemaname in (${t.schema}, ${bookkeepingSchema(t.schema)})
  `.execute(t.db);
  return Object.fromEntries(rows.rows.map((r) => [r.relname, r.n_tup_upd]));
}
