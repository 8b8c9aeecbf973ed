import type { Feedback } from '../schemas/feedback.js';
import type { Heatmap } from '../schemas/heatmap.js';
import type { Recording } from '../schemas/recording.js';
import { WINDOWED_RESOURCES, type WindowedResource } from '../schemas/resources.js';
import type { SurveyAnswer } from '../schemas/survey-answer.js';
import type { Test, TestKind, TestResult } from '../schemas/test.js';
import { DAY_MS, dayStartMs, daysFrom } from '../time/days.js';
import type { DayItems } from './day-data.js';
import type { OddKind, OddResource } from './odd-values.js';
import { type ItemView, itemKey, presentHeatmap, presentWindowed, withExtras } from './presentation.js';
import { type ServerClock, serverDayOf, utcClock } from './server-days.js';
import { DEFAULT_SETTINGS } from './settings.js';
import { presentResults } from './variant-presentation.js';

export interface DatasetMeta {
  /** The day whose feedback count is above the default cap (10th day of the range), if any. */
  busyDay: string | null;
  /** Days with no feedback, survey answer or recording at all. */
  emptyDays: string[];
}

/** Day-level facts a test needs to judge a client: counts per day, the caps, reused-id days. */
export interface TruthMeta extends DatasetMeta {
  /** The cap each resource's responses are cut to (per-resource cap, else the global cap). */
  caps: Record<WindowedResource, number>;
  dayOffsetMinutes: number;
  /** The time zone drawing the server's days, if any (the simulator's dayZone). */
  dayZone: string | null;
  /** Items served per UTC day (valid, odd and malformed alike: all count towards a cap). */
  itemsPerUtcDay: Record<WindowedResource, Record<string, number>>;
  /** The same by the server's own day; equal to itemsPerUtcDay when its days are UTC's. */
  itemsPerServerDay: Record<WindowedResource, Record<string, number>>;
  /** UTC days whose items reuse the previous day's keys (option reuseIds). */
  reusedIdDays: string[];
}

/** An item served with an odd but type-valid value; `dt` tells apart items sharing a key. */
export interface OddItem {
  key: string;
  kind: OddKind;
  field: string;
  dt?: string;
}

/**
 * Everything the simulator would serve, ignoring cap, faults, forbidden/missing endpoints and
 * transient empty answers. Windowed lists are oldest-first (dt, then key); with reused ids two
 * items may share a key (they differ by dt). Malformed items are left out of the valid lists and
 * listed, as served, under `malformed`; a client that validates must have quarantined exactly
 * those. Odd items are valid: they are in the lists and also named under `odd`.
 */
export interface GroundTruth {
  abTests: Test[];
  personalizationTests: Test[];
  /** By test id; malformed variants left out (see malformedVariants). */
  results: { abtesting: Record<string, TestResult[]>; personalization: Record<string, TestResult[]> };
  feedback: Feedback[];
  survey: SurveyAnswer[];
  recordings: Recording[];
  heatmaps: Heatmap[];
  meta: TruthMeta;
  malformed: { feedback: unknown[]; survey: unknown[]; recordings: unknown[] };
  odd: Record<OddResource, OddItem[]>;
  malformedVariants: Array<{ kind: TestKind; testId: string; variant: string }>;
}

/** How the windowed data is served, beyond how each item looks. */
export interface TruthServing {
  /** The items of a UTC day as served (ids reused or not). */
  day(day: string): DayItems;
  dayOffsetMinutes: number;
  dayZone: string | null;
  caps: Record<WindowedResource, number>;
  reusedIdDays: string[];
}

/**
 * The part of the dataset (src/simulator/dataset.ts) the truth is made of: declared here, and
 * extended there, so that the dataset, which asks for its truth, and the truth do not import
 * each other.
 */
export interface TruthSource {
  readonly seed: number;
  readonly from: string;
  readonly to: string;
  readonly days: readonly string[];
  /** The items of one day as served now (late items and edits included); empty outside the range. */
  day(day: string): DayItems;
  /** The tests currently listed (removed ones left out). */
  tests(kind: TestKind): Test[];
  /** Undefined for an unknown or removed test. */
  results(kind: TestKind, id: string): TestResult[] | undefined;
  heatmaps(): Heatmap[];
  meta(): DatasetMeta;
}

export function assembleTruth(
  dataset: TruthSource,
  view: ItemView,
  serving?: Partial<TruthServing>,
): GroundTruth {
  const day = serving?.day ?? dataset.day;
  const clock: ServerClock = {
    dayOffsetMinutes: serving?.dayOffsetMinutes ?? 0,
    dayZone: serving?.dayZone ?? null,
  };
  const cap = DEFAULT_SETTINGS.cap;
  const heatmaps = dataset.heatmaps().map((heatmap) => presentHeatmap(dataset.seed, heatmap, view));
  const truth: GroundTruth = {
    abTests: dataset.tests('abtesting').map((test) => withExtras(test, view)),
    personalizationTests: dataset.tests('personalization').map((test) => withExtras(test, view)),
    results: { abtesting: {}, personalization: {} },
    feedback: [],
    survey: [],
    recordings: [],
    heatmaps: heatmaps.map((served) => served.item),
    meta: {
      ...dataset.meta(),
      caps: serving?.caps ?? { feedback: cap, survey: cap, recordings: cap },
      ...clock,
      itemsPerUtcDay: emptyCounts(dataset.days),
      itemsPerServerDay: emptyCounts(serverDaysOf(dataset, clock)),
      reusedIdDays: serving?.reusedIdDays ?? [],
    },
    malformed: { feedback: [], survey: [], recordings: [] },
    odd: {
      feedback: [],
      survey: [],
      recordings: [],
      heatmaps: heatmaps.flatMap(({ item, odd }) => (odd ? [{ key: item.id, ...odd }] : [])),
    },
    malformedVariants: [],
  };
  for (const kind of ['abtesting', 'personalization'] as const) collectResults(dataset, kind, view, truth);
  for (const date of dataset.days) {
    const items = day(date);
    for (const resource of WINDOWED_RESOURCES)
      collectDay(dataset.seed, resource, date, items[resource], view, truth);
  }
  return truth;
}

function collectResults(dataset: TruthSource, kind: TestKind, view: ItemView, truth: GroundTruth): void {
  for (const test of dataset.tests(kind)) {
    const served = presentResults(dataset.results(kind, test.id) ?? [], view);
    truth.results[kind][test.id] = served.filter((r) => !r.malformed).map((r) => r.item as TestResult);
    for (const result of served.filter((r) => r.malformed)) {
      truth.malformedVariants.push({ kind, testId: test.id, variant: String(result.item.variant) });
    }
  }
}

function collectDay(
  seed: number,
  resource: WindowedResource,
  date: string,
  items: ReadonlyArray<Feedback | SurveyAnswer | Recording>,
  view: ItemView,
  truth: GroundTruth,
): void {
  const { meta } = truth;
  meta.itemsPerUtcDay[resource][date] = (meta.itemsPerUtcDay[resource][date] ?? 0) + items.length;
  const perServerDay = meta.itemsPerServerDay[resource];
  for (const item of items) {
    // Counted from the item as generated: a malformed copy may have lost its dt.
    const serverDay = utcClock(meta) ? date : serverDayOf(Date.parse(item.dt), meta);
    perServerDay[serverDay] = (perServerDay[serverDay] ?? 0) + 1;
    const served = presentWindowed(seed, resource, item, view);
    if (served.malformed) {
      truth.malformed[resource].push(served.item);
      continue;
    }
    (truth[resource] as unknown[]).push(served.item);
    if (served.odd) truth.odd[resource].push({ key: itemKey(resource, item), ...served.odd, dt: item.dt });
  }
}

function emptyCounts(days: readonly string[]): Record<WindowedResource, Record<string, number>> {
  const zeros = (): Record<string, number> => Object.fromEntries(days.map((day) => [day, 0]));
  return { feedback: zeros(), survey: zeros(), recordings: zeros() };
}

/** The server days that overlap the data's UTC days. */
function serverDaysOf(
  dataset: Pick<TruthSource, 'from' | 'to' | 'days'>,
  clock: ServerClock,
): readonly string[] {
  if (utcClock(clock)) return dataset.days;
  const first = serverDayOf(dayStartMs(dataset.from), clock);
  const last = serverDayOf(dayStartMs(dataset.to) + DAY_MS - 1, clock);
  return daysFrom(first, last);
}
