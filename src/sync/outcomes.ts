import type { ResourceShortage } from '../db/resource-shortage.js';
import type { RunStatus } from '../db/tables/bookkeeping.js';
import {
  isWindowed,
  type Resource,
  type SnapshotResource,
  type WindowedResource,
} from '../schemas/resource-names.js';

/**
 * A day window's counts beyond noCounts(), each absent when 0 (and in summaries recorded before
 * it was counted). The one list of them: WindowOutcome has them per window, ResourceSummary their
 * sums, and summarize adds up every key of WINDOW_COUNTS.
 */
export interface WindowCounts {
  /**
   * The rest of the day's items, so that fetched adds up (see ITEM_IDENTITY): versions kept in
   * key_collisions because an item of another day holds their key (setAside), the second and
   * later items with one key in one response (duplicates), items of forgotten visitors
   * (suppressed), valid items of a day that failed as a whole (discarded).
   */
  setAside?: number;
  duplicates?: number;
  suppressed?: number;
  discarded?: number;
  /** Items of neighbouring days that came along (bounds, server day); not in `fetched`. */
  neighbours?: number;
  /** Of them, stored because their own day did not have them yet. */
  neighboursAdded?: number;
  /** Versions newly set aside because their item moved to another day (key_collisions, reason 'moved'; src/load/moved-items.ts). */
  moves?: number;
  /** Rows of the day newly marked missing_upstream_since: absent from its whole reads in two runs in a row (never deleted). */
  missingUpstream?: number;
}

/**
 * Every key of WindowCounts (the compiler holds the two equal), with where summarize starts it
 * for a day-windowed resource: at 0, or absent until a window reports it.
 */
const WINDOW_COUNTS: Record<keyof WindowCounts, 0 | undefined> = {
  setAside: 0,
  duplicates: 0,
  suppressed: 0,
  discarded: 0,
  neighbours: 0,
  neighboursAdded: 0,
  moves: undefined,
  missingUpstream: undefined,
};

/** A snapshot resource's counts beyond noCounts() and removed, each absent when 0. */
export interface SnapshotCounts {
  /** Rows that were marked removed and are listed again. */
  revived?: number;
  /**
   * Rows absent from this run's answer (after one re-read) but kept: one absence is not evidence.
   * Each is removed only if it is still absent on the next run, or its detail answers 404.
   */
  suspicious?: number;
  /** Reads asked again because the answer was an empty list (src/extract/empty-answers.ts). */
  reasked?: number;
}

/** Every key of SnapshotCounts (the compiler holds the two equal). */
const SNAPSHOT_COUNTS: Record<keyof SnapshotCounts, true> = {
  revived: true,
  suspicious: true,
  reasked: true,
};

/** What happened to one window (source, windowed resource, day). */
export interface WindowOutcome extends WindowCounts {
  source: string;
  resource: WindowedResource;
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
  /** Versions newly set aside because an item of another day holds their key. */
  collisions?: number;
  requests: number;
  error?: string;
  /** The source rejected the API key: its other windows are not attempted. */
  fatal?: boolean;
  /** 403 or 404: the endpoint refused this source; the resource's other windows are not attempted. */
  refused?: number;
  /** The database cannot take writes (SQLSTATE class 53 or 54): the run takes no other window. */
  shortage?: ResourceShortage;
  /**
   * A skipped window that was not attempted because of a failure (its source's key rejected, its
   * endpoint refused): not run in the summary, with `error` saying why. A window skipped at
   * shutdown has none.
   */
  notAttempted?: boolean;
}

/** What happened to one snapshot resource (tests with their results, or heatmaps) of a source. */
export interface SnapshotOutcome extends SnapshotCounts {
  source: string;
  resource: SnapshotResource;
  status: 'done' | 'failed' | 'skipped';
  fetched: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  /** Rows marked removed_at this run, on evidence (see "Snapshot" in the README's glossary). */
  removed: number;
  conflicts: number;
  error?: string;
  fatal?: boolean;
  /** 403 or 404: the endpoint refused this source. */
  refused?: number;
  /** See WindowOutcome.notAttempted. */
  notAttempted?: boolean;
}

/** The counts of an outcome before anything was fetched. */
function noCounts() {
  return { fetched: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0, conflicts: 0 };
}

/** A window that was not attempted or not finished (shutdown, or its source's key was rejected): nothing of it written. */
export function skippedWindow(
  source: string,
  resource: WindowOutcome['resource'],
  day: string,
  requests = 0,
): WindowOutcome {
  return { source, resource, day, status: 'skipped', ...noCounts(), truncated: false, requests };
}

/** A window that failed: nothing of it was loaded (`extra` says what was fetched, and why). */
export function failedWindow(
  where: { source: string; resource: WindowOutcome['resource']; day: string },
  requests: number,
  error: string,
  extra: Partial<WindowOutcome> = {},
): WindowOutcome {
  return { ...where, status: 'failed', ...noCounts(), truncated: false, requests, error, ...extra };
}

/** A snapshot that was not attempted, or (with an error) one that failed before writing. */
export function unwrittenSnapshot(
  source: string,
  resource: SnapshotOutcome['resource'],
  status: 'skipped' | 'failed',
): SnapshotOutcome {
  return { source, resource, status, ...noCounts(), removed: 0, revived: 0, suspicious: 0 };
}

/** Per source and resource totals; day windows sum WindowCounts, snapshot resources SnapshotCounts. */
export interface ResourceSummary extends WindowCounts, SnapshotCounts {
  windows: number;
  /** Attempted and failed (as the ledger records them). */
  failedWindows: number;
  /**
   * Not run: not attempted because the run was stopping (shutdown), or because of a failure (key
   * rejected, endpoint refused: those outcomes are marked notAttempted and say why).
   */
  skippedWindows: number;
  truncatedDays: string[];
  fetched: number;
  inserted: number;
  updated: number;
  unchanged: number;
  rejected: number;
  removed: number;
  conflicts: number;
  /** Cross-day key collisions newly set aside (key_collisions). */
  collisions: number;
  errors: string[];
}

/**
 * What every item a day window fetched became (per window, per resource and in total):
 *   fetched = inserted + updated + unchanged + rejected + setAside + duplicates + suppressed + discarded
 * - fetched: items of the window's own day the server served (its neighbours' are `neighbours`);
 * - inserted, updated, unchanged: rows written new, rewritten, or found the same;
 * - rejected: items that failed validation (kept in rejects);
 * - setAside: versions kept in key_collisions, an item of another day holding their key;
 * - duplicates: the second and later items with one key in one response (one is stored);
 * - suppressed: items of forgotten visitors, never stored;
 * - discarded: valid items of a day that failed as a whole (too many invalid items), not written.
 * Snapshot resources (tests, heatmaps) count items read (list, details, re-reads) and rows written
 * to several tables: the identity is not theirs.
 */
export const ITEM_IDENTITY =
  'fetched = inserted + updated + unchanged + rejected + setAside + duplicates + suppressed + discarded';

/** The items a day window's summary leaves unaccounted for: 0 when ITEM_IDENTITY holds. */
export function unaccountedItems(
  s: Pick<ResourceSummary, 'fetched' | 'inserted' | 'updated' | 'unchanged' | 'rejected'> &
    Partial<Pick<ResourceSummary, 'setAside' | 'duplicates' | 'suppressed' | 'discarded'>>,
): number {
  return s.fetched - s.inserted - s.updated - s.unchanged - s.rejected - otherItems(s);
}

/** setAside + duplicates + suppressed + discarded: the "other" column of the run summary. */
export function otherItems(
  s: Partial<Pick<ResourceSummary, 'setAside' | 'duplicates' | 'suppressed' | 'discarded'>>,
): number {
  return (s.setAside ?? 0) + (s.duplicates ?? 0) + (s.suppressed ?? 0) + (s.discarded ?? 0);
}

/**
 * The windows of a resource the run ran: its planned windows less those it did not run (a
 * shutdown, or not attempted because of a failure). Failed windows count as run.
 */
export function windowsRun(s: Pick<ResourceSummary, 'windows' | 'skippedWindows'>): number {
  return s.windows - s.skippedWindows;
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
      collisions: 0,
      errors: [],
      ...(isWindowed(resource) ? startingWindowCounts() : {}),
    };
    return bySource[resource];
  };
  for (const w of windows) {
    const e = entry(w.source, w.resource);
    e.windows += 1;
    countStatus(e, w);
    if (w.truncated) e.truncatedDays.push(w.day);
    e.collisions += w.collisions ?? 0;
    for (const key of keysOf(WINDOW_COUNTS)) {
      const n = w[key];
      if (n !== undefined) e[key] = (e[key] ?? 0) + n;
    }
    add(e, w);
  }
  for (const s of snapshots) {
    const e = entry(s.source, s.resource);
    countStatus(e, s);
    e.removed += s.removed;
    for (const key of keysOf(SNAPSHOT_COUNTS)) e[key] = (e[key] ?? 0) + (s[key] ?? 0);
    add(e, s);
  }
  for (const bySource of Object.values(summary)) {
    for (const e of Object.values(bySource)) e.truncatedDays.sort();
  }
  return summary;
}

/** The WindowCounts a day-windowed resource's totals start with (WINDOW_COUNTS). */
function startingWindowCounts(): WindowCounts {
  const start: WindowCounts = {};
  for (const key of keysOf(WINDOW_COUNTS))
    if (WINDOW_COUNTS[key] !== undefined) start[key] = WINDOW_COUNTS[key];
  return start;
}

function keysOf<T extends object>(record: T): (keyof T)[] {
  return Object.keys(record) as (keyof T)[];
}

/**
 * Failed: attempted, and failed (what the ledger records as failed). A window not attempted, at a
 * shutdown or because of a failure (its key rejected, its endpoint refused), is not run: counted
 * so, the run summary, its last line and the ledger give one number of failed windows.
 */
function countStatus(e: ResourceSummary, o: Pick<WindowOutcome | SnapshotOutcome, 'status'>): void {
  if (o.status === 'failed') e.failedWindows += 1;
  else if (o.status === 'skipped') e.skippedWindows += 1;
}

/** Versions this run set aside and still holds aside, per source, resource and reason (key_collisions). */
export interface SetAsideCount {
  source: string;
  resource: Resource;
  reason: 'collision' | 'moved';
  count: number;
}

/**
 * The summary's collisions and moves, from what the run left in key_collisions rather than from
 * each window's own count: a version one window set aside as a collision is taken back when the
 * day it collided with turns out to have lost the item (a move, src/load/moved-items.ts), which a
 * window loading concurrently cannot know.
 */
export function withSetAside(summary: RunSummary, counts: readonly SetAsideCount[]): RunSummary {
  for (const bySource of Object.values(summary)) {
    for (const [resource, e] of Object.entries(bySource)) {
      e.collisions = 0;
      if (isWindowed(resource)) e.moves = 0;
    }
  }
  for (const c of counts) {
    const e = summary[c.source]?.[c.resource];
    if (e === undefined) continue;
    if (c.reason === 'collision') e.collisions += c.count;
    else e.moves = (e.moves ?? 0) + c.count;
  }
  return summary;
}

function add(
  e: ResourceSummary,
  o: Pick<
    WindowOutcome,
    'fetched' | 'inserted' | 'updated' | 'unchanged' | 'rejected' | 'conflicts' | 'error'
  >,
): void {
  e.fetched += o.fetched;
  e.inserted += o.inserted;
  e.updated += o.updated;
  e.unchanged += o.unchanged;
  e.rejected += o.rejected;
  e.conflicts += o.conflicts;
  if (o.error !== undefined && e.errors.length < MAX_ERRORS_KEPT && !e.errors.includes(o.error))
    e.errors.push(o.error);
}

/**
 * The endpoints that refused a source this run (403 or 404 after the key was accepted), per
 * source and resource: the run stops asking that resource and says so once.
 */
export class EndpointRefusals {
  private readonly refused = new Map<string, { status: number; error: string }>();

  has(source: string, resource: Resource): boolean {
    return this.refused.has(`${source}\n${resource}`);
  }

  /** The line the refusal was reported with; undefined when the endpoint was not refused. */
  reason(source: string, resource: Resource): string | undefined {
    return this.refused.get(`${source}\n${resource}`)?.error;
  }

  /** Records a refusal; true the first time for this source and resource (the time to say so). */
  add(source: string, resource: Resource, status: number, error = `HTTP ${status}`): boolean {
    const key = `${source}\n${resource}`;
    if (this.refused.has(key)) return false;
    this.refused.set(key, { status, error });
    return true;
  }
}

/**
 * A key that may read nothing is a rejected key, even when the server says 403 instead of 401:
 * true when every resource the run asked of the source (two at least: one refusal alone may be a
 * scope) was refused with 403 and none of them loaded anything.
 */
export function everyEndpointForbidden(
  source: string,
  windows: readonly WindowOutcome[],
  snapshots: readonly SnapshotOutcome[],
): boolean {
  const byResource = new Map<Resource, { forbidden: boolean; loaded: boolean }>();
  for (const o of [...windows, ...snapshots]) {
    if (o.source !== source) continue;
    const seen = byResource.get(o.resource) ?? { forbidden: false, loaded: false };
    if (o.refused === 403) seen.forbidden = true;
    if (o.status === 'done' || o.status === 'open') seen.loaded = true;
    byResource.set(o.resource, seen);
  }
  const resources = [...byResource.values()];
  return resources.length >= 2 && resources.every((r) => r.forbidden && !r.loaded);
}

/** What runSync (run-sync.ts) returns: the run's record, each window's and snapshot's outcome. */
export interface RunResult {
  runId: number;
  status: Exclude<RunStatus, 'running'>;
  summary: RunSummary;
  windows: WindowOutcome[];
  snapshots: SnapshotOutcome[];
  /** One line: why the run is not ok. */
  error: string | null;
  durationMs: number;
  /** Per source: HTTP requests (attempts included) by response status, 'none' when no response came. */
  requests: Record<string, Record<string, number>>;
  /** INSIGHTS_METRICS_FILE could not be written (the run itself is loaded and recorded). */
  metricsFileError?: unknown;
  /**
   * The server ended the run lock's connection while the run went on (an operator's
   * pg_terminate_backend, a server restart): one line naming the database and the lock. The run
   * stopped taking windows and is recorded interrupted; the command ends as the database failed it.
   */
  lockLost?: string;
}

/** Counts one response by its HTTP status ('none' when no answer came). */
export function countResponse(byStatus: Record<string, number>, status: number | null): void {
  const key = status === null ? 'none' : String(status);
  byStatus[key] = (byStatus[key] ?? 0) + 1;
}
