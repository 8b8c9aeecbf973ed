import type { WindowedResource } from '../schemas/resources.js';
import type { EndpointName } from './endpoint-names.js';
import { FAULT_KINDS, type FaultKind } from './faults.js';
import type { ItemView } from './presentation.js';

/**
 * How the simulator serves its data. The spec leaves these behaviours open (section 4: bounds,
 * ordering, limits; section 7: errors; section 2: value ranges and keys), so each is a switch a
 * test can flip at run time. SPEC-GAPS.md lists the readings; each option plays one gap.
 */
export interface ServingSettings {
  apiKey: string;
  /** More keys it accepts, serving the same data: several sources on one simulator, told apart in stats().byKey. */
  apiKeys: string[];
  /** When not empty, faults fire only on requests carrying one of these keys (a storm on one source). */
  faultKeys: string[];
  /** Whether startdate's own (server) day is served. */
  startdate: 'inclusive' | 'exclusive';
  /** Whether enddate's own (server) day is served. */
  enddate: 'inclusive' | 'exclusive';
  /**
   * What an ISO instant (`YYYY-MM-DDThh:mm:ss.sssZ`) in startdate or enddate does: 'refused' (400),
   * 'ignored' (the time is dropped: its date is read as a day) or 'honoured' (items are filtered by
   * the instant, with startdate's and enddate's inclusivity at it).
   */
  instants: 'refused' | 'ignored' | 'honoured';
  /** Items served to a windowed request without a limit (the cap still applies); null: the cap. */
  defaultLimit: number | null;
  /** 'random' draws a fresh seeded shuffle for every request. */
  order: 'oldest-first' | 'newest-first' | 'random';
  cap: number;
  /** Per-resource silent cap; overrides `cap` for that resource. */
  caps: Partial<Record<WindowedResource, number>>;
  /** A windowed request whose limit is above this answers 400; null: no maximum. */
  maxLimit: number | null;
  /** The server's day starts at UTC midnight minus this many minutes (-300 is UTC-5). */
  dayOffsetMinutes: number;
  /**
   * A time zone (IANA name) whose clock draws the server's days instead of the offset above,
   * daylight saving included: the days its clock changes last 23 or 25 hours. Null: the offset.
   */
  dayZone: string | null;
  /** Share (0..1) of days whose items reuse the previous day's keys by position. */
  reuseIds: number;
  latencyMs: number;
  faultRate: number;
  faults: FaultKind[];
  retryAfter: 'seconds' | 'http-date';
  stallMs: number;
  malformedRate: number;
  /** Share (0..1) of windowed items and heatmaps served with one odd but type-valid value. */
  oddValueRate: number;
  /** In each test's detail, the first numbered variant has `complete` as a string. */
  malformedVariants: boolean;
  extraFields: boolean;
  /** Endpoints that answer 403 once the key is accepted. */
  forbidden: EndpointName[];
  /** Endpoints that answer 404 once the key is accepted. */
  missing: EndpointName[];
  /** Remaining transient `200 []` answers per endpoint; counts down per request. */
  emptyAnswers: Partial<Record<EndpointName, number>>;
  /** Share (0..1) of snapshot answers (lists and details) played as a transient `200 []`. */
  snapshotEmptyRate: number;
}

export const DEFAULT_SETTINGS: ServingSettings = {
  apiKey: 'sim-key',
  apiKeys: [],
  faultKeys: [],
  startdate: 'inclusive',
  enddate: 'inclusive',
  instants: 'refused',
  defaultLimit: null,
  order: 'oldest-first',
  cap: 1000,
  caps: {},
  maxLimit: null,
  dayOffsetMinutes: 0,
  dayZone: null,
  reuseIds: 0,
  latencyMs: 0,
  faultRate: 0,
  faults: [...FAULT_KINDS],
  retryAfter: 'seconds',
  stallMs: 60_000,
  malformedRate: 0,
  oddValueRate: 0,
  malformedVariants: false,
  extraFields: false,
  forbidden: [],
  missing: [],
  emptyAnswers: {},
  snapshotEmptyRate: 0,
};

/** The widest offsets real time zones use: UTC-14:00 (written +840 here) to UTC+12:00. */
export const DAY_OFFSET_RANGE = { min: -840, max: 720 } as const;

/** The settings that decide how items look, shared by the routes and truth(). */
export function viewOf(settings: ServingSettings): ItemView {
  return {
    extraFields: settings.extraFields,
    malformedRate: settings.malformedRate,
    oddValueRate: settings.oddValueRate,
    malformedVariants: settings.malformedVariants,
  };
}

/** The cap that applies to one resource. */
export function capOf(settings: Pick<ServingSettings, 'cap' | 'caps'>, resource: WindowedResource): number {
  return settings.caps[resource] ?? settings.cap;
}

/**
 * Fresh copies of the list and record settings, so a caller changing its own array or object
 * later does not change what is served (and emptyAnswers counting down does not touch theirs).
 */
export function ownCopies<T extends Partial<ServingSettings>>(patch: T): T {
  const copy: T = { ...patch };
  if (patch.faults) copy.faults = [...patch.faults];
  if (patch.apiKeys) copy.apiKeys = [...patch.apiKeys];
  if (patch.faultKeys) copy.faultKeys = [...patch.faultKeys];
  if (patch.forbidden) copy.forbidden = [...patch.forbidden];
  if (patch.missing) copy.missing = [...patch.missing];
  if (patch.caps) copy.caps = { ...patch.caps };
  if (patch.emptyAnswers) copy.emptyAnswers = { ...patch.emptyAnswers };
  return copy;
}

/** Copies only the serving settings out of a wider options object, dropping undefined values. */
export function pickSettings(
  options: Partial<Record<keyof ServingSettings, unknown>>,
): Partial<ServingSettings> {
  const picked: Partial<Record<keyof ServingSettings, unknown>> = {};
  for (const key of Object.keys(DEFAULT_SETTINGS) as Array<keyof ServingSettings>) {
    if (options[key] !== undefined) picked[key] = options[key];
  }
  return picked as Partial<ServingSettings>;
}
