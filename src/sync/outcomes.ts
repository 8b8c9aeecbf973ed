import type { Resource } from '../schemas/resources.js';

/** What happened to one window (source, windowed resource, day). */
export interface WindowOutcome {
  source: string;
  resource: Resource;
  day: string;
  /** done: closed day loaded; open: today loaded, not closed; failed; skipped: not attempted. */
  status: 'done' | 'open' | 'failed' | 'skipped';
  fetched: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  truncated: boolean;
  /** Items sharing a key with a different item in the same response. */
  conflicts: number;
  requests: number;
  error?: string;
  /** The source rejected the API key: its other windows are not attempted. */
  fatal?: boolean;
}

/** What happened to one snapshot resource (tests with their results, or heatmaps) of a source. */
export interface SnapshotOutcome {
  source: string;
  resource: Resource;
  status: 'done' | 'failed' | 'skipped';
  fetched: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  removed: number;
  conflicts: number;
  error?: string;
  fatal?: boolean;
}

/** The counts of an outcome before anything was fetched. */
export function noCounts() {
  return { fetched: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0, conflicts: 0 };
}

/** A window that was not attempted (shutdown, or its source's key was rejected). */
export function skippedWindow(
  source: string,
  resource: WindowOutcome['resource'],
  day: string,
): WindowOutcome {
  return { source, resource, day, status: 'skipped', ...noCounts(), truncated: false, requests: 0 };
}

/** A snapshot that was not attempted, or (with an error) one that failed before writing. */
export function unwrittenSnapshot(
  source: string,
  resource: SnapshotOutcome['resource'],
  status: 'skipped' | 'failed',
): SnapshotOutcome {
  return { source, resource, status, ...noCounts(), removed: 0 };
}

export interface ResourceSummary {
  windows: number;
  failedWindows: number;
  skippedWindows: number;
  truncatedDays: string[];
  fetched: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  removed: number;
  conflicts: number;
  errors: string[];
}

export type RunSummary = Record<string, Partial<Record<Resource, ResourceSummary>>>;

const MAX_ERRORS_KEPT = 5;

/** Per source and resource totals, as the run log and the CLI show them. */
export function summarize(
  windows: readonly WindowOutcome[],
  snapshots: readonly SnapshotOutcome[],
): RunSummary {
  const summary: RunSummary = {};
  const entry = (source: string, resource: Resource): ResourceSummary => {
    summary[source] ??= {};
    const bySource = summary[source];
    bySource[resource] ??= {
      windows: 0,
      failedWindows: 0,
      skippedWindows: 0,
      truncatedDays: [],
      ...noCounts(),
      removed: 0,
      errors: [],
    };
    return bySource[resource];
  };
  for (const w of windows) {
    const e = entry(w.source, w.resource);
    e.windows += 1;
    if (w.status === 'failed') e.failedWindows += 1;
    if (w.status === 'skipped') e.skippedWindows += 1;
    if (w.truncated) e.truncatedDays.push(w.day);
    add(e, w);
  }
  for (const s of snapshots) {
    const e = entry(s.source, s.resource);
    if (s.status === 'failed') e.failedWindows += 1;
    if (s.status === 'skipped') e.skippedWindows += 1;
    e.removed += s.removed;
    add(e, s);
  }
  for (const bySource of Object.values(summary)) {
    for (const e of Object.values(bySource)) e.truncatedDays.sort();
  }
  return summary;
}

function add(e: ResourceSummary, o: Omit<WindowOutcome, 'day' | 'truncated' | 'requests' | 'status'>): void {
  e.fetched += o.fetched;
  e.inserted += o.inserted;
  e.updated += o.updated;
  e.unchanged += o.unchanged;
  e.rejected += o.rejected;
  e.conflicts += o.conflicts;
  if (o.error !== undefined && e.errors.length < MAX_ERRORS_KEPT && !e.errors.includes(o.error))
    e.errors.push(o.error);
}
