/**
 * The run summary says what the run judged on evidence: empty answers asked again (re-asked),
 * items moved to another day, rows newly marked missing upstream; one line, resources with none
 * left out, and no line when the run judged nothing.
 */
import { describe, expect, it } from 'vitest';
import { EVIDENCE_HEADING, evidenceCounts, printRun } from '../../src/cli/print-run.js';
import { wrapProse } from '../../src/log/terminal-text.js';
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

describe("the run summary's possibly truncated days", () => {
  it('names each, and both causes: a response at the limit or cap, or one that came back short while the server changed', () => {
    const line = printed({ main: { feedback: { ...quiet, truncatedDays: ['2026-03-02', '2026-03-05'] } } })
      .split('\n')
      .find((l) => l.startsWith('possibly truncated days'));
    expect(line).toContain('main/feedback: 2026-03-02, 2026-03-05');
    expect(line).toContain('the limit or the server cap');
    expect(line).toContain('came back short while the server changed how it answers');
    expect(line).toContain('see "Truncated days" in the README');
  });

  it('is left out when no day was', () => {
    expect(printed(judged)).not.toContain('possibly truncated days');
  });
});

describe('the run summary of many sources on an 80-column terminal', () => {
  const sources = Array.from({ length: 30 }, (_, i) => `agency-site-${String(i + 1).padStart(2, '0')}`);
  // Interrupted: of 81 planned windows 19 ran (2 failed), 62 not run.
  const big = {
    ...quiet,
    windows: 81,
    failedWindows: 2,
    skippedWindows: 62,
    fetched: 123456,
    inserted: 123456,
  };
  const summary: RunSummary = Object.fromEntries(
    sources.map((s) => [
      s,
      { feedback: big, survey: big, recordings: big, heatmaps: { ...quiet, windows: 0 } },
    ]),
  );

  function shown(columns: number): string {
    const result: RunResult = {
      runId: 8,
      status: 'ok',
      summary,
      windows: [],
      snapshots: [],
      error: null,
      durationMs: 1000,
      requests: {},
    };
    let text = '';
    printRun(result, { write: (chunk: string) => (text += chunk), columns });
    return text;
  }

  it('keeps a table row per source, its day windows summed, none wider than the terminal', () => {
    // As the command prints it: sentences broken between words, table rows left whole.
    const lines = wrapProse(shown(80), 80).split('\n');
    const table = lines.slice(
      0,
      lines.findIndex((line) => line.startsWith('day windows:')),
    );
    expect(table.filter((line) => line.length > 80)).toEqual([]);
    expect(table.join('\n')).not.toContain('RECORD');
    const rows = table.filter((line) => /^agency-site-\d\d /.test(line));
    expect(rows).toHaveLength(30);
    expect(rows[0]).toMatch(/^agency-site-01 +57 +6 +186 +370368 +370368 +0 +0 +0 +0 +0$/);
  });

  it('shows the windows run and those not run, not the windows planned', () => {
    const one = { main: summary['agency-site-01'] ?? {} };
    let text = '';
    const result: RunResult = {
      runId: 9,
      status: 'interrupted',
      summary: one,
      windows: [],
      snapshots: [],
      error: null,
      durationMs: 1,
      requests: {},
    };
    expect(() => printRun(result, { write: (chunk: string) => (text += chunk) })).toThrow('run interrupted');
    expect(text).toMatch(/^source +resource +windows run +failed +not run +fetched/m);
    expect(text).toMatch(/^main +feedback +19 +2 +62 +123456 /m);
  });

  it('ends with one totals line over every source', () => {
    const lines = shown(80).trimEnd().split('\n');
    expect(lines.at(-1)).toBe(
      `totals: sources=30 windows_run=${30 * 3 * 19} failed=${30 * 3 * 2} not_run=${30 * 3 * 62} fetched=${30 * 3 * 123456} written=${30 * 3 * 123456} truncated_days=0`,
    );
    expect(lines.at(-2)).toBe('run 8: ok in 1.0 s');
  });
});

describe('the run summary of a first backfill whose days bring their neighbours along', () => {
  // 146 new recordings: 4 inserted by their own day's window, 142 stored earlier from a
  // neighbouring day's answer, which their own window then found unchanged.
  const early: ResourceSummary = {
    ...quiet,
    fetched: 146,
    inserted: 4,
    unchanged: 142,
    neighbours: 160,
    neighboursAdded: 142,
  };
  const text = printed({ demo: { recordings: early } });

  it('counts the rows stored early in the totals: written is every row the run wrote', () => {
    expect(text.trimEnd().split('\n').at(-1)).toMatch(/ fetched=146 written=146 /);
  });

  it('says why inserted is low: the neighbours stored early, found unchanged by their own day', () => {
    expect(text).toContain(
      "items of neighbouring days that came along (not in fetched): 160, of them 142 stored because their own day lacked them (in written; their own day's window then finds them unchanged)",
    );
  });
});
