/**
 * Which folder of src/ may import which (docs/architecture.md explains the layers). Run by
 * `npm run lint`, so CI refuses an import against them.
 *
 *   ground floor  src/errors.ts, src/time/, src/log/, src/db/        imports no feature folder
 *   contracts     src/schemas/ (zod only), src/config/ (ground floor and schemas)
 *   shared        src/privacy/, src/queue/ (ground floor, schemas, config)
 *   stages        src/api/ -> src/extract/ -> src/load/ -> src/ledger/   (the data flow)
 *   use-cases     src/sync/ (the only module that knows every stage, and the queue's user),
 *                 src/status/ and src/report/ (read the ledger), src/check/, src/webhooks/,
 *                 src/schedule/, src/simulator/
 *   commands      src/cli/
 */
const GROUND = '^src/(errors[.]ts|time/|log/|db/)';
/** The data flow, in order. */
const STAGES = ['api', 'extract', 'load', 'ledger'];
const USE_CASES = '(sync|status|report|check|webhooks|schedule|simulator)';

/** An earlier stage never imports a later one (validate lives in extract/). */
const againstTheFlow = STAGES.slice(0, -1).map((stage, i) => ({
  name: `no-import-against-the-flow-from-${stage}`,
  comment: 'api -> extract (validate) -> load -> ledger: an earlier stage never imports a later one.',
  severity: 'error',
  from: { path: `^src/${stage}/` },
  to: { path: `^src/(${STAGES.slice(i + 1).join('|')})/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, the simulator included.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'src-not-to-dev-code',
      comment: 'The product never imports tests, benchmarks or scripts.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'src-not-to-jobs',
      comment:
        'jobs/ says what the scheduler runs; src/ does not reach it, except the schedule command, the ' +
        'composition root that reads the job definitions and hands them to the scheduler.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/schedule-run[.]ts$' },
      to: { path: '^jobs/' },
    },
    {
      name: 'ground-floor-imports-no-feature',
      comment:
        'Dates, errors, logging and the database helpers are shared by everything: they import none of it, ' +
        "but the registry's names (src/schemas/resource-names.ts, no imports), which the tables' row types use.",
      severity: 'error',
      from: { path: GROUND },
      to: { path: '^src/', pathNot: [GROUND, '^src/schemas/resource-names[.]ts$'] },
    },
    {
      name: 'schemas-import-only-schemas',
      comment: 'schemas/ holds the shapes every stage shares: zod only.',
      severity: 'error',
      from: { path: '^src/schemas/' },
      to: { path: '^src/', pathNot: '^src/schemas/' },
    },
    {
      name: 'config-imports-no-feature',
      comment: 'Config is read first and given to everything: it imports the ground floor and schemas only.',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/', pathNot: [GROUND, '^src/(schemas|config)/'] },
    },
    {
      name: 'privacy-imports-no-feature',
      comment: 'Privacy (pii, suppression list) is applied by load, sync and webhooks: it imports none of them.',
      severity: 'error',
      from: { path: '^src/privacy/' },
      to: { path: '^src/', pathNot: [GROUND, '^src/(schemas|privacy)/'] },
    },
    {
      name: 'queue-imports-no-feature',
      comment:
        'The queue (pg-boss, its job table, the slots, the contract of a dispatch) is used by sync/ and ' +
        'read by status/: it imports the ground floor, schemas and config only.',
      severity: 'error',
      from: { path: '^src/queue/' },
      to: { path: '^src/', pathNot: [GROUND, '^src/(schemas|config|queue)/'] },
    },
    {
      name: 'only-sync-and-status-use-the-queue',
      comment: 'sync/ runs windows through the queue, status/ reads it, and the worker command opens it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(queue|sync|status|cli)/' },
      to: { path: '^src/queue/' },
    },
    ...againstTheFlow,
    {
      name: 'api-and-extract-never-touch-the-database',
      comment: 'Fetching and validating write nothing: api/ and extract/ never import db/.',
      severity: 'error',
      from: { path: '^src/(api|extract)/' },
      to: { path: '^src/db/' },
    },
    {
      name: 'only-sync-joins-stages',
      comment:
        'A stage hands its output to sync/, which gives it to the next: load and ledger import no other ' +
        'stage (what two stages share lives in schemas/ or on the ground floor). extract is the API client\'s ' +
        'one user and may import api/.',
      severity: 'error',
      from: { path: '^src/(load|ledger)/' },
      to: { path: '^src/(api|extract|load|ledger)/', pathNot: '^src/$1/' },
    },
    {
      name: 'side-use-cases-import-one-stage-at-most',
      comment:
        'Only sync/ imports two stages. webhooks/ stores through load/ only; schedule/ and the simulator ' +
        'import no stage; check/ asks the API (api/) and nothing else of the flow.',
      severity: 'error',
      from: { path: '^src/(webhooks|schedule|simulator|check)/' },
      to: { path: '^src/(extract|ledger)/' },
    },
    {
      name: 'side-use-cases-do-not-load',
      comment: 'status/, report/, schedule/, check/ and the simulator read or serve: they load nothing.',
      severity: 'error',
      from: { path: '^src/(status|report|schedule|simulator|check)/' },
      to: { path: '^src/load/' },
    },
    {
      name: 'only-sync-and-check-call-the-api',
      comment: 'The API is asked by a run (through extract/) and by check; webhooks/, status/, report/ never ask it.',
      severity: 'error',
      from: { path: '^src/(webhooks|status|report|schedule|simulator)/' },
      to: { path: '^src/api/' },
    },
    {
      name: 'readers-read-the-ledger-through-its-queries',
      comment:
        'status/ and report/ read sync_windows and watermarks through src/ledger/read.ts (and the ' +
        'period its verify reads sum over, read-period.ts), never the ledger\'s writes or its planning.',
      severity: 'error',
      from: { path: '^src/(status|report)/' },
      to: { path: '^src/ledger/', pathNot: '^src/ledger/read(-period)?[.]ts$' },
    },
    {
      name: 'use-cases-are-not-imported',
      comment:
        'The use-cases are called by cli/ (and jobs/), never by a lower floor or by each other; status/ ' +
        'alone reads the run record sync/ writes (next rule).',
      severity: 'error',
      from: { path: '^src/([^/]+)', pathNot: ['^src/cli/', '^src/status/'] },
      to: { path: `^src/${USE_CASES}/`, pathNot: '^src/$1/' },
    },
    {
      name: 'status-reads-only-the-run-record-of-sync',
      comment:
        'status/ shows what runs recorded: the run summary (outcomes.ts), the run log (run-log.ts) and ' +
        'late arrivals (late-arrivals.ts) of sync/; nothing else of another use-case.',
      severity: 'error',
      from: { path: '^src/status/' },
      to: {
        path: `^src/${USE_CASES}/`,
        pathNot: ['^src/status/', '^src/sync/(outcomes|run-log|late-arrivals)[.]ts$'],
      },
    },
    {
      name: 'nothing-imports-cli',
      comment: 'cli/ is the top floor: one file per command.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
