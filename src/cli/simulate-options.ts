import type { WindowedResource } from '../schemas/resource-names.js';
import { ENDPOINT_NAMES } from '../simulator/endpoint-names.js';

/** Options as commander hands them over: strings, validated by parseSimulateOptions. */
export interface RawSimulateOptions {
  port: string;
  host: string;
  seed: string;
  days?: string;
  from?: string;
  to?: string;
  apiKey: string;
  /** The readings of the spec's gaps are optional here, so callers that predate them still fit. */
  startdate?: string;
  enddate: string;
  order: string;
  cap: string;
  caps?: string;
  capFeedback?: string;
  capSurvey?: string;
  capRecordings?: string;
  maxLimit?: string;
  instants?: string;
  defaultLimit?: string;
  dayOffsetMinutes?: string;
  dayZone?: string;
  reuseIds?: string;
  latencyMs: string;
  faultRate: string;
  faults?: string;
  retryAfter: string;
  stallMs: string;
  malformedRate: string;
  oddValueRate?: string;
  malformedVariants?: boolean;
  extraFields?: boolean;
  forbidden?: string;
  missing?: string;
  emptyAnswers?: string;
  feedbackPerDay?: string;
  surveyPerDay?: string;
  recordingsPerDay?: string;
  busyDayFeedback?: string;
}

/** Volume flags (mean items per day): a benchmark serves a million items with a few hundred days. */
export const VOLUME_OPTIONS = [
  ['feedbackPerDay', '--feedback-per-day', 'mean feedback items per day [default: 8]'],
  ['surveyPerDay', '--survey-per-day', 'mean survey answers per day [default: 6]'],
  ['recordingsPerDay', '--recordings-per-day', 'mean recordings per day [default: 5]'],
  ['busyDayFeedback', '--busy-day-feedback', 'feedback items on the busy day (the 10th) [default: 1500]'],
] as const;

export const DEFAULT_DAYS = 30;

/** --cap-<resource> flags; each overrides --caps for its resource. */
export const CAP_OPTIONS = [
  ['capFeedback', 'feedback'],
  ['capSurvey', 'survey'],
  ['capRecordings', 'recordings'],
] as const satisfies ReadonlyArray<readonly [keyof RawSimulateOptions, WindowedResource]>;

export const ENDPOINT_LIST = ENDPOINT_NAMES.join(',');
