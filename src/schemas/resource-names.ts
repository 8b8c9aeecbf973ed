/**
 * The registry of resources: every resource the tool reads, its kind and the table it loads. Every
 * other list of resources is derived from this one, and each per-resource map elsewhere is a
 * `satisfies Record<Resource, ...>` (or a switch ending in `never`), so a resource added here is a
 * compile error wherever it must be handled:
 *   zod schema     src/schemas/resources.ts (RESOURCE_SCHEMAS)
 *   client call    src/api/api-client.ts (window() for a windowed one, one method per snapshot)
 *   loader         src/load/windowed.ts (WINDOWED_SPECS), src/sync/run-snapshots.ts (SNAPSHOT_JOBS)
 *   table          here; the database's CHECKs on resource are tested against WINDOWED_RESOURCES
 *                  (test/db/resource-checks.test.ts)
 * No zod here: the CLI's option definitions and the database's row types need the names only, and
 * `--help` loads no zod.
 */

export type ResourceKind = 'windowed' | 'snapshot';

/**
 * windowed: read one UTC day at a time (spec 4: startdate, enddate, limit), into one table.
 * snapshot: read whole on every run; `table` is its list's table (a test's results go to
 * test_results as well).
 */
export const RESOURCES = {
  feedback: { kind: 'windowed', table: 'feedback' },
  survey: { kind: 'windowed', table: 'survey_answers' },
  recordings: { kind: 'windowed', table: 'recordings' },
  abtesting: { kind: 'snapshot', table: 'ab_tests' },
  personalization: { kind: 'snapshot', table: 'personalization_tests' },
  heatmaps: { kind: 'snapshot', table: 'heatmaps' },
} as const satisfies Record<string, { kind: ResourceKind; table: string }>;

export type Resource = keyof typeof RESOURCES;
type OfKind<K extends ResourceKind> = {
  [R in Resource]: (typeof RESOURCES)[R]['kind'] extends K ? R : never;
}[Resource];
/** Resources read one UTC day at a time. */
export type WindowedResource = OfKind<'windowed'>;
/** Resources read whole on every run. */
export type SnapshotResource = OfKind<'snapshot'>;
/** The table a resource loads, e.g. survey_answers for survey. */
export type ResourceTable<R extends Resource = Resource> = (typeof RESOURCES)[R]['table'];

/** Every resource, windowed first, in the registry's order. */
export const ALL_RESOURCES: readonly Resource[] = Object.keys(RESOURCES) as Resource[];

export function isWindowed(resource: string): resource is WindowedResource {
  return Object.hasOwn(RESOURCES, resource) && RESOURCES[resource as Resource].kind === 'windowed';
}

export function isSnapshot(resource: string): resource is SnapshotResource {
  return Object.hasOwn(RESOURCES, resource) && RESOURCES[resource as Resource].kind === 'snapshot';
}

export const WINDOWED_RESOURCES: readonly WindowedResource[] = ALL_RESOURCES.filter(isWindowed);
export const SNAPSHOT_RESOURCES: readonly SnapshotResource[] = ALL_RESOURCES.filter(isSnapshot);

/** The table of a resource. */
export function tableOf<R extends Resource>(resource: R): ResourceTable<R> {
  return RESOURCES[resource].table;
}
