import type {
  DailyActivityView,
  DayCompletenessView,
  FeedbackEnrichedView,
  MissingUpstreamView,
  SurveyAnswersEnrichedView,
  SyncHealthView,
  TestResultDailyView,
  TestResultsView,
} from './tables/analyst-views.js';
import type {
  LateArrivalsTable,
  ReadingChangesTable,
  RejectsTable,
  SchemaDriftTable,
  SchemaDriftTurnsTable,
  SyncRunsTable,
  SyncWindowsTable,
  WatermarksTable,
} from './tables/bookkeeping.js';
import type { ExpectedAllocationsTable } from './tables/expected-allocations.js';
import type { FeedbackTable } from './tables/feedback.js';
import type { HeatmapsTable } from './tables/heatmaps.js';
import type { QueueRunChecksTable, QueueSlotsTable, QueueWorkersTable } from './tables/queue.js';
import type { RecordingsTable } from './tables/recordings.js';
import type { RequestBudgetsTable } from './tables/request-budgets.js';
import type { RunLockTable } from './tables/run-lock.js';
import type { KeyCollisionsTable, ServerReadingsTable } from './tables/server-readings.js';
import type { HeatmapVersionsTable, TestVersionsTable } from './tables/snapshot-versions.js';
import type { SourcesTable } from './tables/sources.js';
import type { SuppressedVisitorsTable } from './tables/suppressed-visitors.js';
import type { SuppressionLockTable } from './tables/suppression-lock.js';
import type { SurveyAnswersTable } from './tables/survey-answers.js';
import type { TestResultHistoryTable, TestResultsTable } from './tables/test-results.js';
import type { TestsTable } from './tables/tests.js';
import type { VisitorsTable } from './tables/visitors.js';
import type { WebhookEventsTable } from './tables/webhook-events.js';

/**
 * The warehouse as Kysely sees it. Mirrors migrations/ exactly; test/db/db-types.test.ts
 * generates the types from a migrated database and compares.
 */
export interface Database {
  sources: SourcesTable;
  ab_tests: TestsTable;
  personalization_tests: TestsTable;
  test_results: TestResultsTable;
  test_result_history: TestResultHistoryTable;
  visitors: VisitorsTable;
  feedback: FeedbackTable;
  survey_answers: SurveyAnswersTable;
  recordings: RecordingsTable;
  heatmaps: HeatmapsTable;
  sync_runs: SyncRunsTable;
  sync_windows: SyncWindowsTable;
  watermarks: WatermarksTable;
  rejects: RejectsTable;
  schema_drift: SchemaDriftTable;
  schema_drift_turns: SchemaDriftTurnsTable;
  late_arrivals: LateArrivalsTable;
  reading_changes: ReadingChangesTable;
  webhook_events: WebhookEventsTable;
  suppressed_visitors: SuppressedVisitorsTable;
  server_readings: ServerReadingsTable;
  key_collisions: KeyCollisionsTable;
  run_lock: RunLockTable;
  suppression_lock: SuppressionLockTable;
  ab_test_versions: TestVersionsTable;
  personalization_test_versions: TestVersionsTable;
  heatmap_versions: HeatmapVersionsTable;
  queue_slots: QueueSlotsTable;
  queue_workers: QueueWorkersTable;
  queue_run_checks: QueueRunChecksTable;
  request_budgets: RequestBudgetsTable;
  expected_allocations: ExpectedAllocationsTable;
  // The analyst views (migration 0004): read-only.
  ab_test_results: TestResultsView;
  personalization_results: TestResultsView;
  test_result_daily: TestResultDailyView;
  feedback_enriched: FeedbackEnrichedView;
  survey_answers_enriched: SurveyAnswersEnrichedView;
  daily_activity: DailyActivityView;
  sync_health: SyncHealthView;
  day_completeness: DayCompletenessView;
  missing_upstream: MissingUpstreamView;
}
