import { sql } from 'kysely';
import type { LoadTransaction } from '../db/transaction.js';
import type { ResourceTable, SnapshotResource } from '../schemas/resource-names.js';
import type { WarehouseTable } from './upsert.js';

/**
 * The history of a snapshot list (migration 0015): each row of ab_tests, personalization_tests
 * or heatmaps has one current version in its *_versions table holding its tracked attributes and
 * whether it is removed. After a snapshot load, a version that no longer matches its row is
 * closed and a new one opened at the same instant; a row with no current version gets one. Both
 * statements are set-based, and an unchanged row writes nothing.
 */
export interface VersionedList {
  table: ResourceTable<SnapshotResource>;
  versions: 'ab_test_versions' | 'personalization_test_versions' | 'heatmap_versions';
  /** The columns a version tracks: a change in any of them (or in removal) is a new version. */
  attributes: readonly string[];
}

const TEST_ATTRIBUTES = ['test_name', 'url', 'goal_profile_id'] as const;

export const VERSIONED_LISTS = {
  abtesting: { table: 'ab_tests', versions: 'ab_test_versions', attributes: TEST_ATTRIBUTES },
  personalization: {
    table: 'personalization_tests',
    versions: 'personalization_test_versions',
    attributes: TEST_ATTRIBUTES,
  },
  heatmaps: {
    table: 'heatmaps',
    versions: 'heatmap_versions',
    attributes: ['name', 'url', 'rule', 'start_time', 'end_time', 'heatmap_limit'],
  },
} as const satisfies {
  [R in SnapshotResource]: VersionedList & { table: ResourceTable<R>; versions: WarehouseTable };
};

/**
 * Serializes the loads of one source's snapshot lists, in the caller's transaction until it ends:
 * the history compares the stored versions with the rows, which only holds if no other load
 * writes either meanwhile. Taken before the load touches any row, so loads lock in one order.
 * A row lock, not an advisory one (see migration 0013): it needs UPDATE on sources, which analysts
 * lack; FOR NO KEY UPDATE leaves the foreign-key checks of other writers (FOR KEY SHARE) alone.
 */
export async function lockSourceSnapshots(trx: Pick<LoadTransaction, 'db'>, sourceId: string): Promise<void> {
  await sql`select 1 from sources where source_id = ${sourceId} for no key update`.execute(trx.db);
}

/**
 * Brings the versions of one source's list in line with its rows; call it after the list's load
 * and its removals, holding lockSourceSnapshots. Returns how many versions it opened.
 *
 * The instant is taken after the lock, not the transaction's start: a load that waited for
 * another must not close that load's versions before they began. It is later than every current
 * version's start even if the clock stepped back, so a closed version never ends before it begins.
 */
export async function recordVersions(
  trx: LoadTransaction,
  list: VersionedList,
  sourceId: string,
): Promise<number> {
  const versions = sql.table(list.versions);
  const rows = sql.table(list.table);
  const names = list.attributes.map((a) => sql.id(a));
  const stored = sql.join([...list.attributes.map((a) => sql.ref(`v.${a}`)), sql`v.removed`]);
  const current = sql.join([...list.attributes.map((a) => sql.ref(`t.${a}`)), sql`t.removed_at is not null`]);
  const at = await sql<{ at: Date }>`
    select greatest(clock_timestamp(),
                    (select max(valid_from) + interval '1 microsecond' from ${versions}
                      where source_id = ${sourceId} and valid_to is null)) as at`.execute(trx.db);
  const instant = at.rows[0]?.at;
  if (instant === undefined) throw new Error('no instant for the versions');
  await sql`
    update ${versions} v set valid_to = ${instant}
      from ${rows} t
     where v.source_id = ${sourceId} and v.valid_to is null
       and t.source_id = v.source_id and t.id = v.id
       and (${stored}) is distinct from (${current})`.execute(trx.db);
  const opened = await sql`
    insert into ${versions} (source_id, id, valid_from, ${sql.join(names)}, removed)
    select t.source_id, t.id, ${instant}, ${sql.join(list.attributes.map((a) => sql.ref(`t.${a}`)))},
           t.removed_at is not null
      from ${rows} t
     where t.source_id = ${sourceId}
       and not exists (select 1 from ${versions} v
                        where v.source_id = t.source_id and v.id = t.id and v.valid_to is null)
     order by t.id`.execute(trx.db);
  return Number(opened.numAffectedRows ?? 0);
}
