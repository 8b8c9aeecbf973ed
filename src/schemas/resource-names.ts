/**
 * The names of the resources, without their schemas: what the CLI's option definitions need, so
 * `--help` loads no zod.
 */

/** Resources read one UTC day at a time (spec 4: startdate, enddate, limit). */
export const WINDOWED_RESOURCES = ['feedback', 'survey', 'recordings'] as const;
export type WindowedResource = (typeof WINDOWED_RESOURCES)[number];

/** Resources read whole on every run. */
export const SNAPSHOT_RESOURCES = ['abtesting', 'personalization', 'heatmaps'] as const;
export type SnapshotResource = (typeof SNAPSHOT_RESOURCES)[number];

export const ALL_RESOURCES = [...WINDOWED_RESOURCES, ...SNAPSHOT_RESOURCES] as const;
export type Resource = (typeof ALL_RESOURCES)[number];
