import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import type { ReadingField } from '../extract/reading-changes.js';

/**
 * What `status` shows of reading_changes (written by src/sync/reading-store.ts as a reading is
 * stored): per source, its last change, that is the fields one store changed together last.
 */
export interface ReadingChangeStatus {
  source: string;
  resource: string;
  field: ReadingField;
  from: string;
  to: string;
  changedAt: string;
  runId: number | null;
  evidence: string;
}

export async function lastReadingChanges(db: Kysely<Database>): Promise<ReadingChangeStatus[]> {
  const rows = await db
    .selectFrom('reading_changes as c')
    .selectAll('c')
    .where((eb) =>
      eb(
        'c.changed_at',
        '=',
        eb
          .selectFrom('reading_changes as l')
          .select(({ fn }) => fn.max('l.changed_at').as('last'))
          .whereRef('l.source_id', '=', 'c.source_id'),
      ),
    )
    .orderBy('c.source_id')
    .orderBy('c.change_id')
    .execute();
  return rows.map((r) => ({
    source: r.source_id,
    resource: r.resource,
    field: r.field,
    from: r.from_value,
    to: r.to_value,
    changedAt: r.changed_at.toISOString(),
    runId: r.run_id,
    evidence: r.evidence,
  }));
}

/** One line, e.g. "main/feedback order: oldest-first -> unordered (run 12, 2026-03-08T03:00:00.000Z): responses listed ...". */
export function describeReadingChange(change: ReadingChangeStatus): string {
  const when = change.runId === null ? change.changedAt : `run ${change.runId}, ${change.changedAt}`;
  return `${change.source}/${change.resource} ${change.field}: ${change.from} -> ${change.to} (${when}): ${change.evidence}`;
}
