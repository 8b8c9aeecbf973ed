/**
 * Where the inventory of unknown fields (schema_drift) puts the fields of a test's per-variant
 * results: a test is one item of its resource, its variants part of it, so their fields sit under
 * this list's path (`results[].x_new`), counted once per test that carries them. Their rows are
 * kept in test_results, not in the test's table. No zod: dbt-sources reads it too.
 */
export const TEST_RESULTS_PATH = 'results[]';

/** The table whose raw column holds a field of the inventory, and the field's path in that raw. */
export function driftTableOf(
  listTable: string,
  resource: string,
  fieldPath: string,
): { table: string; field: string } {
  const prefix = `${TEST_RESULTS_PATH}.`;
  if ((resource === 'abtesting' || resource === 'personalization') && fieldPath.startsWith(prefix))
    return { table: 'test_results', field: fieldPath.slice(prefix.length) };
  return { table: listTable, field: fieldPath };
}
