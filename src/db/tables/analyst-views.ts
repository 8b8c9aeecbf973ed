import type { ColumnType } from 'kysely';
import type { WindowedResource } from '../../schemas/resource-names.js';

/**
 * The analyst views (migration 0004), read-only: a view column can be selected, never inserted or
 * updated. PostgreSQL declares every view column nullable, and so do these types.
 */
type V<T> = ColumnType<T | null, never, never>;

/** ab_test_results and personalization_results: latest results with the statistics vs control. */
export interface TestResultsView {
  source_id: V<string>;
  test_id: V<string>;
  test_name: V<string>;
  url: V<string>;
  goal_profile_id: V<string>;
  variant: V<string>;
  is_control: V<boolean>;
  complete: V<number>;
  total: V<number>;
  conversion: V<number>;
  conversion_ci_low: V<number>;
  conversion_ci_high: V<number>;
  control_variant: V<string>;
  control_conversion: V<number>;
  absolute_lift: V<number>;
  relative_lift: V<number>;
  lift_ci_low: V<number>;
  lift_ci_high: V<number>;
  z_score: V<number>;
  p_value: V<number>;
  last_seen_at: V<Date>;
  last_changed_at: V<Date>;
  removed_at: V<Date>;
  /** Migration 0012: the sample-ratio-mismatch check (against equal allocation) and Holm's adjustment. */
  srm_chi_square: V<number>;
  srm_p_value: V<number>;
  sample_ratio_mismatch: V<boolean>;
  p_value_holm: V<number>;
  /** Migration 0024: the declared split, its check and the row's verdict. */
  expected_share: V<number>;
  /** Migration 0037: 'allocation incomplete', a split declared for some of the variants only. */
  srm_status: V<'allocation unknown' | 'allocation incomplete' | 'mismatch' | 'ok' | 'not computable'>;
  verdict: V<'winner' | 'loser' | 'inconclusive' | 'untrustworthy'>;
}

export interface TestResultDailyView {
  source_id: V<string>;
  test_kind: V<'abtesting' | 'personalization'>;
  test_id: V<string>;
  test_name: V<string>;
  variant: V<string>;
  is_control: V<boolean>;
  day: V<string>;
  complete: V<number>;
  total: V<number>;
  conversion: V<number>;
  previous_day: V<string>;
  complete_increment: V<number>;
  total_increment: V<number>;
  captured_at: V<Date>;
}

interface VisitorColumns {
  visitor_id: V<string>;
  device: V<string>;
  browser: V<string>;
  os: V<string>;
  landing_page: V<string>;
  ref_page: V<string>;
}

export interface FeedbackEnrichedView extends VisitorColumns {
  source_id: V<string>;
  id: V<number>;
  feedback_id: V<number>;
  question: V<string>;
  session: V<string>;
  comment: V<string>;
  rating: V<number>;
  rating_text: V<string>;
  dt: V<Date>;
  day: V<string>;
  url: V<string>;
  screenshot: V<string>;
  origin: V<'api' | 'webhook' | 'both'>;
  /** Migration 0015: only the webhook has the row; day is its delivery's receipt day. */
  is_provisional: V<boolean>;
  /** Migration 0038: a newer version of the item failed validation; this row is stale. */
  superseded_by_reject_at: V<Date>;
}

export interface SurveyAnswersEnrichedView extends VisitorColumns {
  source_id: V<string>;
  id: V<number>;
  question_id: V<number>;
  question: V<string>;
  answer: V<string>;
  session: V<string>;
  dt: V<Date>;
  day: V<string>;
  url: V<string>;
  origin: V<'api' | 'webhook' | 'both'>;
  /** Migration 0015: only the webhook has the row; day is its delivery's receipt day. */
  is_provisional: V<boolean>;
  /** Migration 0038: a newer version of the item failed validation; this row is stale. */
  superseded_by_reject_at: V<Date>;
}

export interface DailyActivityView {
  source_id: V<string>;
  day: V<string>;
  feedback_count: V<number>;
  average_rating: V<number>;
  survey_answer_count: V<number>;
  survey_response_count: V<number>;
  recording_count: V<number>;
  average_recording_duration: V<number>;
  /** Migration 0015: of the day's counts, the rows only the webhook has delivered (no dt yet). */
  provisional_feedback_count: V<number>;
  provisional_survey_answer_count: V<number>;
  /** Migration 0023: each windowed resource's day status (DayStatus), and the rating's sum and count. */
  feedback_day_status: V<DayStatus>;
  survey_day_status: V<DayStatus>;
  recordings_day_status: V<DayStatus>;
  rating_sum: V<number>;
  rating_count: V<number>;
}

/** Whether a windowed resource's day is stored whole (day_completeness.status). */
export type DayStatus = 'complete' | 'truncated' | 'failed' | 'open' | 'not loaded';

/** day_completeness (migration 0023): the ledger as analysts see it, one row per source, resource and day. */
export interface DayCompletenessView {
  source_id: V<string>;
  resource: V<WindowedResource>;
  day: V<string>;
  status: V<DayStatus>;
  items_stored: V<number>;
  most_served: V<number>;
  requested_limit: V<number>;
  cap_learned: V<number>;
  last_read_at: V<Date>;
  /**
   * Migration 0037: items_stored under its honest name (the items the last read returned); the
   * rows the table holds on the day; the day's versions kept in key_collisions instead.
   */
  items_read: V<number>;
  rows_stored: V<number>;
  items_set_aside: V<number>;
  /** Migration 0040: the day reopened (0039), and when a verify last read it and what it found. */
  reopened_at: V<Date>;
  last_verified_at: V<Date>;
  last_verify_lacked: V<number>;
  last_verify_changed: V<number>;
  last_verify_gone: V<number>;
  last_verify_moved: V<number>;
}

/** missing_upstream (migration 0028): windowed rows the service no longer has, left out of the other views. */
export interface MissingUpstreamView {
  source_id: V<string>;
  resource: V<WindowedResource>;
  item_key: V<string>;
  dt: V<Date>;
  day: V<string>;
  absent_since: V<Date>;
  missing_upstream_since: V<Date>;
  /** Migration 0038: a newer version of the item failed validation. */
  superseded_by_reject_at: V<Date>;
}

export interface SyncHealthView {
  source_id: V<string>;
  resource: V<string>;
  kind: V<'windowed' | 'snapshot'>;
  start_day: V<string>;
  watermark: V<string>;
  lag_days: V<number>;
  truncated_days: V<number>;
  last_truncated_day: V<string>;
  failed_days: V<number>;
  rejected_items: V<number>;
  last_loaded_at: V<Date>;
  last_run_id: V<number>;
  last_run_status: V<string>;
  last_run_started_at: V<Date>;
  last_run_finished_at: V<Date>;
  /** Migration 0025: the last successful read of the resource, whatever changed. */
  last_read_at: V<Date>;
}
