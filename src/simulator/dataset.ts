import type { Heatmap } from '../schemas/heatmap.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { Test, TestKind, TestResult } from '../schemas/test.js';
import { DAY_MS, dayDiff, daysFrom, isDay, isoAt } from '../time/days.js';
import { type AdvanceOptions, type AdvanceReport, applyAdvance, feedbackKey } from './advance.js';
import { type DatasetState, type DayOverlay, overlayOf } from './dataset-state.js';
import { type DayItems, generateDay, sortDayItems } from './day-data.js';
import { type DayPlan, type DayRole, DEFAULT_VOLUME, planDay, type Volume } from './day-plan.js';
import type { ItemContext } from './item-builders.js';
import { DEFAULT_VIEW, type ItemView, itemKey } from './presentation.js';
import { generateSnapshots } from './snapshot-data.js';
import { assembleTruth, type GroundTruth, type TruthSource } from './truth.js';
import { createVisitorPool } from './visitors.js';

export interface DatasetOptions {
  /** Default 1. */
  seed?: number;
  /** First day with data, `YYYY-MM-DD` (UTC). */
  from: string;
  /** Last day with data, included. */
  to: string;
  volume?: Partial<Volume>;
}

/** What moveItem did: the item's key, and its dt before and after. */
export interface MovedItem {
  resource: WindowedResource;
  key: string;
  fromDt: string;
  toDt: string;
}

export type TestEdit = Partial<Pick<Test, 'test_name' | 'url' | 'goal_profile_id'>>;
export type HeatmapEdit = Partial<
  Pick<Heatmap, 'name' | 'url' | 'rule' | 'start_time' | 'end_time' | 'heatmap_limit'>
>;

/**
 * Everything the simulator serves. Windowed items are generated one day at a time on demand from
 * (seed, day), so a year of a million items costs memory only for the days being read.
 * Returned arrays and objects are shared: treat them as read-only.
 */
export interface Dataset extends TruthSource {
  /** Item counts without generating the items (cheap even for a million). */
  totals(): Record<WindowedResource, number>;
  advance(options?: AdvanceOptions): AdvanceReport;
  /**
   * Changes a test's attributes as its owner would in the service's dashboard (a rename, another
   * page or goal); its updated_at moves a minute forward. Throws for an id the dataset lacks.
   */
  editTest(kind: TestKind, id: string, patch: TestEdit): void;
  /** The same for a heatmap (its name, page, rule, times or limit). */
  editHeatmap(id: string, patch: HeatmapEdit): void;
  /**
   * Replaces a test's results, as its traffic would have made them: a test allocated 70/30, say,
   * which the generated (uniformly random) totals never are. Throws for an id the dataset lacks.
   */
  setTestResults(kind: TestKind, id: string, results: readonly TestResult[]): void;
  /**
   * Moves the day's `index`-th item (oldest first) to another day, keeping its key and its time
   * of day, as a service whose owner corrected an item's date would: the old day no longer
   * serves it, the new day does. Throws when the day has no such item.
   */
  moveItem(resource: WindowedResource, fromDay: string, index: number, toDay: string): MovedItem;
  /** Deletes the day's `index`-th item (oldest first): no day serves it any more. Returns its key. */
  removeItem(resource: WindowedResource, day: string, index: number): string;
  /** Everything at once; `view` decides extra fields and which items are malformed. */
  truth(view?: Partial<ItemView>): GroundTruth;
}

/** The 10th day of a range of at least 10 days is the busy day (feedback above the default cap). */
const BUSY_DAY_INDEX = 9;
/** The 3rd day of a range of at least 5 days has no items at all. */
const EMPTY_DAY_INDEX = 2;
// Generated days kept in memory; a client usually walks days in order, so a small window is enough.
const DAY_CACHE_SIZE = 32;

export function generateDataset(options: DatasetOptions): Dataset {
  const { seed, from, to, volume } = checkedOptions(options);
  const days = daysFrom(from, to);
  const plans = new Map<string, DayPlan>(
    days.map((day, i) => [day, planDay(seed, day, dayRole(i, days.length), volume)]),
  );
  const busyDay = days.length > BUSY_DAY_INDEX ? (days[BUSY_DAY_INDEX] ?? null) : null;
  const context: ItemContext = { seed, visitors: createVisitorPool(seed, from) };
  const state: DatasetState = {
    rounds: 0,
    overlays: new Map(),
    removed: new Set(),
    snapshots: generateSnapshots(seed, from, to),
  };
  const cache = new Map<string, DayItems>();
  const day = (date: string): DayItems =>
    cachedDay(cache, date, () => {
      const plan = plans.get(date);
      if (!plan) return undefined;
      return withOverlay(generateDay(context, date, plan), state.overlays.get(date));
    });

  const dataset: Dataset = {
    seed,
    from,
    to,
    days,
    day,
    tests: (kind) => state.snapshots.tests[kind].filter((test) => !state.removed.has(test.id)),
    results: (kind, id) => (state.removed.has(id) ? undefined : state.snapshots.results[kind].get(id)),
    heatmaps: () => state.snapshots.heatmaps,
    meta: () => ({ busyDay, emptyDays: emptyDays(days, plans, state) }),
    totals: () => itemTotals(plans, state),
    advance: (advanceOptions = {}) =>
      applyAdvance(
        { seed, days, context, state, day, invalidate: (date) => cache.delete(date) },
        advanceOptions,
      ),
    editTest: (kind, id, patch) => editTest(state, kind, id, patch),
    setTestResults: (kind, id, results) => setTestResults(state, kind, id, results),
    editHeatmap: (id, patch) => editHeatmap(state, id, patch),
    moveItem: (resource, fromDay, index, toDay) => {
      if (!plans.has(toDay)) throw new RangeError(`${toDay} is outside ${from}..${to}`);
      const moved = movedItem(day(fromDay)[resource][index], toDay);
      if (moved === undefined) throw new RangeError(`no ${resource} item ${index} on ${fromDay}`);
      const key = itemKey(resource, moved.item as never);
      takeFromDay(state, resource, fromDay, key);
      // Back to the day it was generated on: shown again there, as it was.
      const arrived = overlayOf(state, toDay);
      if (arrived.movedAway?.[resource].delete(key) !== true)
        (arrived[resource] as unknown[]).push(moved.item);
      cache.delete(fromDay);
      cache.delete(toDay);
      return { resource, key, fromDt: moved.fromDt, toDt: moved.item.dt };
    },
    removeItem: (resource, date, index) => {
      const item = day(date)[resource][index];
      if (item === undefined) throw new RangeError(`no ${resource} item ${index} on ${date}`);
      const key = itemKey(resource, item as never);
      takeFromDay(state, resource, date, key);
      cache.delete(date);
      return key;
    },
    truth: (view = {}) => assembleTruth(dataset, { ...DEFAULT_VIEW, ...view }),
  };
  return dataset;
}

/** The options with their defaults, or a RangeError naming the one that is wrong. */
function checkedOptions(options: DatasetOptions): { seed: number; from: string; to: string; volume: Volume } {
  const seed = options.seed ?? 1;
  const { from, to } = options;
  if (!isDay(from) || !isDay(to))
    throw new RangeError(`from and to must be dates YYYY-MM-DD, got ${from} and ${to}`);
  if (from > to) throw new RangeError(`from (${from}) must not be after to (${to})`);
  if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);
  const volume: Volume = { ...DEFAULT_VOLUME, ...options.volume };
  for (const [name, value] of Object.entries(volume)) {
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`volume.${name} must be a number >= 0`);
  }
  return { seed, from, to, volume };
}

/** The role of the range's `index`-th day: the busy and the empty day when the range is long enough. */
function dayRole(index: number, dayCount: number): DayRole {
  if (index === BUSY_DAY_INDEX && dayCount > BUSY_DAY_INDEX) return 'busy';
  if (index === EMPTY_DAY_INDEX && dayCount >= 5) return 'empty';
  return 'ordinary';
}

/**
 * The day's items from the cache, or made by `make` and cached (no items for a day `make` does
 * not know, and those are not cached).
 */
function cachedDay(cache: Map<string, DayItems>, date: string, make: () => DayItems | undefined): DayItems {
  const cached = cache.get(date);
  if (cached) {
    // Re-insert so the map's order stays least-recently-used first.
    cache.delete(date);
    cache.set(date, cached);
    return cached;
  }
  const items = make();
  if (!items) return { feedback: [], survey: [], recordings: [] };
  cache.set(date, items);
  if (cache.size > DAY_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
  return items;
}

/** The days with no item planned and none added since. */
function emptyDays(
  days: readonly string[],
  plans: ReadonlyMap<string, DayPlan>,
  state: DatasetState,
): string[] {
  return days.filter((date) => {
    const plan = plans.get(date);
    const overlay = state.overlays.get(date);
    const planned = plan ? plan.feedback + plan.survey + plan.recordings : 0;
    const late = overlay ? overlay.feedback.length + overlay.survey.length + overlay.recordings.length : 0;
    return planned + late === 0;
  });
}

/** Items planned, plus those added since, less those moved away or removed. */
function itemTotals(
  plans: ReadonlyMap<string, DayPlan>,
  state: DatasetState,
): Record<WindowedResource, number> {
  const totals = { feedback: 0, survey: 0, recordings: 0 };
  for (const plan of plans.values()) {
    totals.feedback += plan.feedback;
    totals.survey += plan.survey;
    totals.recordings += plan.recordings;
  }
  for (const overlay of state.overlays.values()) {
    totals.feedback += overlay.feedback.length - (overlay.movedAway?.feedback.size ?? 0);
    totals.survey += overlay.survey.length - (overlay.movedAway?.survey.size ?? 0);
    totals.recordings += overlay.recordings.length - (overlay.movedAway?.recordings.size ?? 0);
  }
  return totals;
}

function editTest(state: DatasetState, kind: TestKind, id: string, patch: TestEdit): void {
  const tests = state.snapshots.tests[kind];
  const index = tests.findIndex((test) => test.id === id);
  const test = tests[index];
  if (test === undefined) throw new RangeError(`no ${kind} test ${id}`);
  tests[index] = { ...test, ...patch, updated_at: minuteLater(test.updated_at) };
}

function setTestResults(
  state: DatasetState,
  kind: TestKind,
  id: string,
  results: readonly TestResult[],
): void {
  if (!state.snapshots.results[kind].has(id)) throw new RangeError(`no ${kind} test ${id}`);
  state.snapshots.results[kind].set(
    id,
    results.map((r) => ({ ...r })),
  );
}

function editHeatmap(state: DatasetState, id: string, patch: HeatmapEdit): void {
  const heatmaps = state.snapshots.heatmaps;
  const index = heatmaps.findIndex((heatmap) => heatmap.id === id);
  const heatmap = heatmaps[index];
  if (heatmap === undefined) throw new RangeError(`no heatmap ${id}`);
  heatmaps[index] = { ...heatmap, ...patch, updated_at: minuteLater(heatmap.updated_at) };
}

/**
 * The item of `key` no longer served on `date`: an item moved in before just leaves the day's
 * overlay; a generated one is hidden from its day.
 */
function takeFromDay(state: DatasetState, resource: WindowedResource, date: string, key: string): void {
  const overlay = overlayOf(state, date);
  const added = overlay[resource] as unknown[];
  const at = added.findIndex((item) => itemKey(resource, item as never) === key);
  if (at >= 0) added.splice(at, 1);
  else {
    overlay.movedAway ??= { feedback: new Set(), survey: new Set(), recordings: new Set() };
    overlay.movedAway[resource].add(key);
  }
}

/** The same item on another day: its dt keeps the time of day. */
function movedItem<T extends { dt: string }>(
  item: T | undefined,
  toDay: string,
): { item: T; fromDt: string } | undefined {
  if (item === undefined) return undefined;
  const shift = dayDiff(item.dt.slice(0, 10), toDay) * DAY_MS;
  return { item: { ...item, dt: isoAt(Date.parse(item.dt) + shift) }, fromDt: item.dt };
}

function minuteLater(timestamp: string): string {
  return isoAt(Date.parse(timestamp) + 60_000);
}

function withOverlay(base: DayItems, overlay: DayOverlay | undefined): DayItems {
  if (!overlay) return base;
  const { edits, movedAway } = overlay;
  const stays =
    <R extends WindowedResource>(resource: R) =>
    (item: DayItems[R][number]) =>
      movedAway === undefined || !movedAway[resource].has(itemKey(resource, item as never));
  const feedback = [...base.feedback.filter(stays('feedback')), ...overlay.feedback].map((item) => {
    const edit = edits.get(feedbackKey(item));
    return edit ? { ...item, ...edit } : item;
  });
  return sortDayItems({
    feedback,
    survey: [...base.survey.filter(stays('survey')), ...overlay.survey],
    recordings: [...base.recordings.filter(stays('recordings')), ...overlay.recordings],
  });
}
