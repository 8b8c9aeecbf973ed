/**
 * `status` of an agency's 30 sources on an 80-column terminal: the tables fit (headings broken or
 * abbreviated, one column wrapped) instead of turning every row into a record.
 */
import { describe, expect, it } from 'vitest';
import { renderStatus } from '../../src/cli/status.js';
import { wrapProse } from '../../src/log/terminal-text.js';
import { ALL_RESOURCES } from '../../src/schemas/resource-names.js';
import type { SourceState } from '../../src/status/attention.js';
import type { ResourceStatus, RunRow, StatusReport } from '../../src/status/status-report.js';
import type { ResourceSummary } from '../../src/sync/outcomes.js';

const SOURCES = Array.from({ length: 30 }, (_, i) => `agency-site-${String(i + 1).padStart(2, '0')}`);
const NEVER = 'agency-site-30';

function resource(source: string, name: string): ResourceStatus {
  const never = source === NEVER;
  return {
    source,
    resource: name,
    watermark: never ? null : '2026-03-10',
    lagDays: never ? null : 1,
    truncatedDays: source === 'agency-site-07' ? ['2026-03-01', '2026-03-02'] : [],
    newTruncatedDays: [],
    failedWindows: source === 'agency-site-12' ? [{ day: '2026-03-09', error: 'HTTP 500 three times' }] : [],
    rejectedItems: 1234,
    keyCollisions: 0,
    missingUpstream: 0,
    reading: null,
  };
}

function counts(windows: number, failed: number, notRun: number): ResourceSummary {
  return {
    windows,
    failedWindows: failed,
    skippedWindows: notRun,
    truncatedDays: [],
    fetched: 123456,
    inserted: 100000,
    updated: 3456,
    unchanged: 20000,
    rejected: 0,
    removed: 0,
    conflicts: 0,
    collisions: 0,
    errors: [],
  };
}

function run(runId: number, status: string): RunRow {
  return {
    runId,
    trigger: 'backfill',
    status,
    startedAt: '2026-03-11T03:00:00.000Z',
    finishedAt: '2026-03-11T03:40:00.000Z',
    durationMs: 2_400_000,
    error: null,
    fromDay: '2026-01-01',
    toDay: '2026-03-10',
    summary: Object.fromEntries(SOURCES.map((s) => [s, { feedback: counts(81, 2, 60) }])),
    orphaned: false,
  };
}

const report: StatusReport = {
  today: '2026-03-12',
  resources: SOURCES.flatMap((s) => ALL_RESOURCES.map((r) => resource(s, r))),
  runs: [run(12, 'interrupted'), run(11, 'partial'), run(10, 'ok')],
  webhooks: [],
  webhookConfirmDays: 3,
  sources: SOURCES.map(
    (source): SourceState => ({
      source,
      configured: true,
      inWarehouse: source !== NEVER,
      state: source === NEVER ? 'never loaded' : source === 'agency-site-12' ? 'needs attention' : 'ok',
      lastRun: null,
      lastError: null,
    }),
  ),
  attention: [],
  healthy: true,
  runLock: null,
  readingChanges: [],
  schemaDrift: [],
};

describe('status of 30 sources on an 80-column terminal', () => {
  it('keeps its tables as tables, no line wider than the terminal', () => {
    // As the command prints it: sentences are broken between words, table rows are left whole.
    const screen = wrapProse(renderStatus(report, { columns: 80 }), 80);
    const lines = screen.split('\n');
    expect(lines.filter((line) => line.length > 80)).toEqual([]);
    expect(screen).not.toContain('RECORD');
    // One line per source, and one per run.
    for (const source of SOURCES)
      expect(
        lines.filter((l) => l.startsWith(`${source} `)),
        source,
      ).toHaveLength(1);
    expect(screen).toMatch(/^agency-site-30 .*never loaded/m);
    for (const id of [10, 11, 12]) expect(screen).toMatch(new RegExp(`^ *${id} +backfill`, 'm'));
    expect(lines.length).toBeLessThan(80);
  });

  it('keeps each source resource table a table too under --details', () => {
    const screen = wrapProse(renderStatus(report, { columns: 80, details: true }), 80);
    expect(screen.split('\n').filter((line) => line.length > 80)).toEqual([]);
    expect(screen).not.toContain('RECORD');
  });
});
