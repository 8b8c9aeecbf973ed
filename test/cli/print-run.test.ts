/**
 * The run summary says what the run judged on evidence: empty answers asked again (re-asked),
 * items moved to another day, rows newly marked missing upstream; one line, resources with none
 * left out, and no line when the run judged nothing.
 */
import { describe, expect, it } from 'vitest';
import { EVIDENCE_HEADING, evidenceCounts, printRun } from '../../src/cli/print-run.js';
import type { ResourceSummary, RunResult, RunSummary } from '../../src/sync/outcomes.js';

const quiet: ResourceSummary = {
  windows: 1,
  failedWindows: 0,
  skippedWindows: 0,
  truncatedDays: [],
  fetched: 3,
  inserted: 3,
  updated: 0,
  unchanged: 0,
  rejected: 0,
  removed: 0,
  conflicts: 0,
  collisions: 0,
  errors: [],
};

const judged: RunSummary = {
  main: {
    feedback: { ...quiet, moves: 0, missingUpstream: 0 },
    recordings: { ...quiet, moves: 2, missingUpstream: 1 },
    abtesting: { ...quiet, reasked: 3 },
  },
  other: { survey: { ...quiet, missingUpstream: 4 } },
};

function printed(summary: RunSummary): string {
  const result: RunResult = {
    runId: 7,
    status: 'ok',
    summary,
    windows: [],
    snapshots: [],
    error: null,
    durationMs: 1000,
    requests: {},
  };
  let text = '';
  printRun(result, { write: (chunk: string) => (text += chunk) });
  return text;
}

describe('the run summary counts what the run judged on evidence', () => {
  it('names each resource with a count, and only those', () => {
    expect(evidenceCounts(judged)).toEqual([
      'main/recordings: 2 moved, 1 missing upstream',
      'main/abtesting: 3 re-asked',
      'other/survey: 4 missing upstream',
    ]);
  });

  it('printRun prints them on one line after their heading', () => {
    const lines = printed(judged).split('\n');
    expect(lines).toContain(
      `${EVIDENCE_HEADING}: main/recordings: 2 moved, 1 missing upstream; main/abtesting: 3 re-asked; other/survey: 4 missing upstream`,
    );
  });

  it('prints no such line when the run judged nothing', () => {
    const text = printed({ main: { feedback: { ...quiet, moves: 0, missingUpstream: 0 }, heatmaps: quiet } });
    expect(text).toContain('run 7: ok');
    expect(text).not.toContain('missing upstream');
    expect(text).not.toContain('re-asked');
  });
});
