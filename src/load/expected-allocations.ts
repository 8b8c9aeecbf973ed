import type { DeclaredSplit, ExpectedAllocation } from '../config/source-config.js';
import type { LoadTransaction } from '../db/transaction.js';

/** A row of expected_allocations: '*' as test_id is the source's default, as variant every other variant. */
export interface AllocationRow {
  test_id: string;
  variant: string;
  weight: number;
}

/** The config's declared splits as rows, sorted by key (two writers lock them in the same order). */
export function allocationRows(allocation: ExpectedAllocation | undefined): AllocationRow[] {
  const rows: AllocationRow[] = [];
  const add = (testId: string, split: DeclaredSplit) => {
    if (split === 'equal') rows.push({ test_id: testId, variant: '*', weight: 1 });
    else
      for (const [variant, weight] of Object.entries(split)) rows.push({ test_id: testId, variant, weight });
  };
  if (allocation?.default !== undefined) add('*', allocation.default);
  for (const [testId, split] of Object.entries(allocation?.tests ?? {})) add(testId, split);
  const key = (r: AllocationRow) => `${r.test_id}\u0000${r.variant}`;
  return rows.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

/**
 * Makes the source's rows of expected_allocations what the config declares: the config is the
 * only place a split is declared, so a split taken out of it stops the check.
 */
export async function storeExpectedAllocation(
  trx: LoadTransaction,
  sourceId: string,
  allocation: ExpectedAllocation | undefined,
): Promise<void> {
  const rows = allocationRows(allocation);
  const stored = await trx.db
    .selectFrom('expected_allocations')
    .select(['test_id', 'variant', 'weight'])
    .where('source_id', '=', sourceId)
    .orderBy('test_id')
    .orderBy('variant')
    .execute();
  if (JSON.stringify(stored) === JSON.stringify(rows)) return;
  await trx.db.deleteFrom('expected_allocations').where('source_id', '=', sourceId).execute();
  if (rows.length > 0)
    await trx.db
      .insertInto('expected_allocations')
      .values(rows.map((r) => ({ source_id: sourceId, ...r })))
      .onConflict((oc) =>
        oc
          .columns(['source_id', 'test_id', 'variant'])
          .doUpdateSet((eb) => ({ weight: eb.ref('excluded.weight') })),
      )
      .execute();
}
