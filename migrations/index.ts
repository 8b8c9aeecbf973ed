import type { Migration } from 'kysely/migration';
import * as core from './0001-core.js';
import * as webhooks from './0002-webhooks.js';
import * as analystLayer from './0004-analyst-layer.js';
import * as privacy from './0005-privacy.js';
import * as serverReadings from './0006-server-readings.js';
import * as suppressions from './0007-suppressions.js';
import * as snapshotEvidence from './0008-snapshot-evidence.js';
import * as valueRanges from './0009-value-ranges.js';
import * as runLock from './0010-run-lock.js';
import * as webhookRetention from './0011-webhook-retention.js';
import * as experimentChecks from './0012-experiment-checks.js';
import * as suppressionLock from './0013-suppression-lock.js';
import * as bookkeepingSchema from './0014-bookkeeping-schema.js';
import * as snapshotVersions from './0015-snapshot-versions.js';
import * as provisionalDays from './0016-provisional-days.js';
import * as queue from './0017-queue.js';
import * as runHeartbeat from './0018-run-heartbeat.js';
import * as requestBudgets from './0019-request-budgets.js';
import * as ownerFunctions from './0020-owner-functions.js';
import * as bookkeepingReaders from './0021-bookkeeping-readers.js';
import * as pinnedSearchPath from './0022-pinned-search-path.js';
import * as dayCompleteness from './0023-day-completeness.js';
import * as expectedAllocations from './0024-expected-allocations.js';
import * as lastRead from './0025-last-read.js';
import * as movedItems from './0026-moved-items.js';
import * as schemaDrift from './0027-schema-drift.js';
import * as missingUpstreamViews from './0028-missing-upstream-views.js';
import * as lateArrivals from './0029-late-arrivals.js';
import * as readingChanges from './0030-reading-changes.js';
import * as instants from './0031-instants.js';
import * as snapshotSchemaDrift from './0032-snapshot-schema-drift.js';
import * as visitorIndexOrder from './0033-visitor-index-order.js';
import * as driftTurns from './0034-drift-turns.js';
import * as webhookMergeFunction from './0035-webhook-merge-function.js';
import * as windowQueueJsonb from './0036-window-queue-jsonb.js';
import * as analystHonesty from './0037-analyst-honesty.js';
import * as supersededByReject from './0038-superseded-by-reject.js';
import * as reopenedDays from './0039-reopened-days.js';
import * as verify from './0040-verify.js';
import * as windowMerge from './0041-window-merge.js';
import * as webhookBatchFunction from './0042-webhook-batch-function.js';
import * as visitorMergeFunction from './0043-visitor-merge-function.js';
import * as windowMergePasses from './0044-window-merge-passes.js';
import * as stagingKeptPlanned from './0045-staging-kept-planned.js';
import * as mergeShortcutsPlannedOnce from './0046-merge-shortcuts-planned-once.js';
import * as unchangedWindowLean from './0047-unchanged-window-lean.js';
import * as webhookVisitorsLean from './0048-webhook-visitors-lean.js';
import * as sharedRunChecks from './0049-shared-run-checks.js';
import * as capsSharedByWorkers from './0050-caps-shared-by-workers.js';
import * as settledUnder from './0051-settled-under.js';
import * as readingReach from './0052-reading-reach.js';
import * as wholeAnswersVouched from './0053-whole-answers-vouched.js';
import * as reopenedReadAgain from './0054-reopened-read-again.js';
import * as boundItems from './0055-bound-items.js';

/**
 * Every migration, in order. A static list (not a folder scan) so the same code runs from
 * TypeScript sources and from a build.
 */
export const migrations: Record<string, Migration> = {
  '0001-core': core,
  '0002-webhooks': webhooks,
  '0004-analyst-layer': analystLayer,
  '0005-privacy': privacy,
  '0006-server-readings': serverReadings,
  '0007-suppressions': suppressions,
  '0008-snapshot-evidence': snapshotEvidence,
  '0009-value-ranges': valueRanges,
  '0010-run-lock': runLock,
  '0011-webhook-retention': webhookRetention,
  '0012-experiment-checks': experimentChecks,
  '0013-suppression-lock': suppressionLock,
  '0014-bookkeeping-schema': bookkeepingSchema,
  '0015-snapshot-versions': snapshotVersions,
  '0016-provisional-days': provisionalDays,
  '0017-queue': queue,
  '0018-run-heartbeat': runHeartbeat,
  '0019-request-budgets': requestBudgets,
  '0020-owner-functions': ownerFunctions,
  '0021-bookkeeping-readers': bookkeepingReaders,
  '0022-pinned-search-path': pinnedSearchPath,
  '0023-day-completeness': dayCompleteness,
  '0024-expected-allocations': expectedAllocations,
  '0025-last-read': lastRead,
  '0026-moved-items': movedItems,
  '0027-schema-drift': schemaDrift,
  '0028-missing-upstream-views': missingUpstreamViews,
  '0029-late-arrivals': lateArrivals,
  '0030-reading-changes': readingChanges,
  '0031-instants': instants,
  '0032-snapshot-schema-drift': snapshotSchemaDrift,
  '0033-visitor-index-order': visitorIndexOrder,
  '0034-drift-turns': driftTurns,
  '0035-webhook-merge-function': webhookMergeFunction,
  '0036-window-queue-jsonb': windowQueueJsonb,
  '0037-analyst-honesty': analystHonesty,
  '0038-superseded-by-reject': supersededByReject,
  '0039-reopened-days': reopenedDays,
  '0040-verify': verify,
  '0041-window-merge': windowMerge,
  '0042-webhook-batch-function': webhookBatchFunction,
  '0043-visitor-merge-function': visitorMergeFunction,
  '0044-window-merge-passes': windowMergePasses,
  '0045-staging-kept-planned': stagingKeptPlanned,
  '0046-merge-shortcuts-planned-once': mergeShortcutsPlannedOnce,
  '0047-unchanged-window-lean': unchangedWindowLean,
  '0048-webhook-visitors-lean': webhookVisitorsLean,
  '0049-shared-run-checks': sharedRunChecks,
  '0050-caps-shared-by-workers': capsSharedByWorkers,
  '0051-settled-under': settledUnder,
  '0052-reading-reach': readingReach,
  '0053-whole-answers-vouched': wholeAnswersVouched,
  '0054-reopened-read-again': reopenedReadAgain,
  '0055-bound-items': boundItems,
};
