/**
 * The tables of the bookkeeping schema (`<schema>_state`, src/db/bookkeeping.ts), by name: what
 * the migrations put there, which the tests of the schema's contents and of what an analyst lists
 * hold them to. A migration that adds one changes this list on purpose.
 */
export const BOOKKEEPING_TABLES: readonly string[] = [
  'kysely_migration',
  'kysely_migration_lock',
  'late_arrivals',
  'queue_run_checks',
  'queue_slots',
  'queue_workers',
  'reading_changes',
  'rejects',
  'request_budgets',
  'run_lock',
  'schema_drift',
  'schema_drift_turns',
  'server_readings',
  'suppressed_visitors',
  'suppression_lock',
  'sync_runs',
  'sync_windows',
  'watermarks',
  'webhook_events',
];
