import { existsSync } from 'node:fs';
import path from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import base from '../../vitest.config.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * The trials that time nothing and measure nothing: what they assert holds however slowly they
 * run, so they run two at a time (the `pairs` project). They wait on servers, worker processes,
 * job expiry and the registry far more than they compute, and the two cores fill up. Every other
 * trial runs alone (the `alone` project): it times processes or measures throughput, memory,
 * heap limits or request pacing, which another trial's load would blur. A new trial runs alone
 * until it is listed here.
 */
const TWO_AT_A_TIME = [
  'test/queue/queue-checks.trials.ts',
  'test/queue/queue-instants.trials.ts',
  'test/queue/queue-last-stretch.trials.ts',
  'test/queue/queue-readings.trials.ts',
  'test/queue/queue-reread-search.trials.ts',
  'test/queue/queue-runs.trials.ts',
  'test/queue/queue-switch-search.trials.ts',
  'test/queue/queue-switch.trials.ts',
  'test/queue/queue-workers.trials.ts',
  'test/reliability/bench-smoke.trials.ts',
  'test/reliability/canary-secrets.trials.ts',
  'test/reliability/clock-skew.trials.ts',
  'test/reliability/compiled-bin.trials.ts',
  'test/reliability/completeness-matrix.trials.ts',
  'test/reliability/completeness.trials.ts',
  'test/reliability/crash-backfill.trials.ts',
  'test/reliability/image.trials.ts',
  'test/reliability/package.trials.ts',
  'test/reliability/pii-key.trials.ts',
  'test/reliability/reading-between-runs.trials.ts',
  'test/reliability/reading-changes.trials.ts',
  'test/reliability/queue-kill.trials.ts',
  'test/reliability/rerun-identical.trials.ts',
  'test/reliability/security-surface.trials.ts',
  'test/reliability/security.trials.ts',
  'test/reliability/time-slices.trials.ts',
  'test/reliability/watermark.trials.ts',
];
// A renamed trial would silently fall back to running alone: name it here again.
for (const file of TWO_AT_A_TIME)
  if (!existsSync(path.join(ROOT, file)))
    throw new Error(`${file}, listed to run two at a time, does not exist`);

/**
 * The pairs' longest trials, longest first (each 2 to 5 minutes on 2 cores). A fresh clone has no
 * timings cached, and vitest then starts the largest files first: the longest trial, a small file,
 * started 11 minutes into the pairs and ran on alone at their end. Unlisted trials follow in
 * vitest's own order (the longest first, once it has timed them).
 */
const LONGEST_FIRST = [
  'test/reliability/reading-changes.trials.ts',
  'test/reliability/crash-backfill.trials.ts',
  'test/queue/queue-switch-search.trials.ts',
  'test/reliability/queue-kill.trials.ts',
  'test/reliability/bench-smoke.trials.ts',
  'test/reliability/completeness-matrix.trials.ts',
  'test/reliability/completeness.trials.ts',
];
for (const file of LONGEST_FIRST)
  if (!TWO_AT_A_TIME.includes(file)) throw new Error(`${file}, listed to start first, is not a pair`);

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = LONGEST_FIRST.indexOf(path.relative(ROOT, spec.moduleId).split(path.sep).join('/'));
      return at === -1 ? LONGEST_FIRST.length : at;
    };
    const groupOf = (spec: TestSpecification) => spec.project.config.sequence.groupOrder;
    // Stable: the groups and every unlisted trial keep the order vitest gave them.
    return (await super.sort(files)).sort((a, b) => groupOf(a) - groupOf(b) || rank(a) - rank(b));
  }
}

/**
 * `npm run test:reliability`: the long trials (every `*.trials.ts`, filed beside the tests of what
 * they try: docs/reliability.md's SIGKILL mid-backfill, 10,000 fuzzed webhook bodies, every setting
 * as a process, canary secrets through every command; the queue's worker processes), apart from
 * `npm test` to keep that one quick. First the trials that time something, one file at a time;
 * then the others, two files at a time.
 */
// Each project names its own files and runs the global setup (a test database template, the CLI
// transpiled) for itself: `extends` would add the root's to theirs, and the root would run it too.
const { include: _quickTests, globalSetup, ...shared } = base.test ?? {};

export default defineConfig({
  ...base,
  root: ROOT,
  test: {
    ...shared,
    // A fresh process per trial file: they are few and long, and they change process-wide state
    // (environment, signal handlers) more freely than the quick tests do.
    isolate: true,
    testTimeout: 120_000,
    sequence: { ...shared.sequence, sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'alone',
          globalSetup,
          include: ['test/**/*.trials.ts'],
          exclude: [...configDefaults.exclude, ...TWO_AT_A_TIME],
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'pairs',
          globalSetup,
          include: TWO_AT_A_TIME,
          fileParallelism: true,
          maxWorkers: 2,
          // After the `alone` group: never beside a trial that times something.
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
