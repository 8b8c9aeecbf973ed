import { describe, expect, it } from 'vitest';
import {
  type AttentionInput,
  attentionReasons,
  MAX_LAG_DAYS,
  sourceStates,
} from '../../src/status/attention.js';
import { type SourceRun, sourceRunOutcome } from '../../src/status/source-runs.js';
import type { ResourceSummary } from '../../src/sync/outcomes.js';

const loaded = { source: 'shop', configured: true, inWarehouse: true, lastRun: null, lastError: null };
const resource = (overrides: Partial<AttentionInput['resources'][number]> = {}) => ({
  source: 'shop',
  resource: 'feedback',
  watermark: '2026-03-09',
  lagDays: 0,
  failedWindows: [],
  ...overrides,
});
const run = (overrides: Partial<AttentionInput['runs'][number]> = {}) => ({
  runId: 7,
  trigger: 'sync',
  status: 'ok',
  error: null,
  orphaned: false,
  ...overrides,
});

describe('what status says needs attention', () => {
  it('nothing when every source loaded, nothing failed, nothing lags and the last run ended ok', () => {
    expect(
      attentionReasons({
        sources: [loaded],
        resources: [resource({ lagDays: MAX_LAG_DAYS })],
        runs: [run()],
      }),
    ).toEqual([]);
  });

  it(`a resource more than ${MAX_LAG_DAYS} days behind, naming the watermark and the nightly run`, () => {
    const [reason, ...rest] = attentionReasons({
      sources: [loaded],
      resources: [resource({ lagDays: MAX_LAG_DAYS + 1, watermark: '2026-03-01' })],
      runs: [run()],
    });
    expect(rest).toEqual([]);
    expect(reason).toMatchObject({ source: 'shop', resource: 'feedback' });
    expect(reason?.reason).toContain(`${MAX_LAG_DAYS + 1} days behind yesterday (watermark 2026-03-01`);
    expect(reason?.next).toContain('schedule');
  });

  it('failed windows, with the backfill that reloads them', () => {
    const [reason] = attentionReasons({
      sources: [loaded],
      resources: [
        resource({
          failedWindows: [
            { day: '2026-03-02', error: 'HTTP 500' },
            { day: '2026-03-04', error: 'HTTP 502' },
          ],
        }),
      ],
      runs: [run({ status: 'partial', error: '2 window(s) failed' })],
    });
    expect(reason?.reason).toBe('shop/feedback: 2 failed window(s), last 2026-03-04: HTTP 502');
    expect(reason?.next).toContain(
      'backfill --source shop --resources feedback --from 2026-03-02 --to 2026-03-04',
    );
  });

  it('an orphaned run once (not again as the last run ended interrupted); the last run not ok otherwise', () => {
    const orphan = attentionReasons({
      sources: [],
      resources: [],
      runs: [run({ runId: 9, status: 'interrupted', orphaned: true }), run()],
    });
    expect(orphan.map((a) => a.runId)).toEqual([9]);
    expect(orphan[0]?.reason).toContain('its process is gone');
    const interrupted = attentionReasons({
      sources: [],
      resources: [],
      runs: [run({ status: 'interrupted', error: 'interrupted before every window ran' })],
    });
    expect(interrupted[0]?.reason).toBe(
      'the last run, 7 (sync), ended interrupted: interrupted before every window ran',
    );
  });

  it('a configured source never loaded, with its last error; one no longer configured is neither checked nor a reason', () => {
    const sources = [
      { source: 'new', configured: true, inWarehouse: false, lastRun: null, lastError: 'API key rejected' },
      { source: 'old', configured: false, inWarehouse: true, lastRun: null, lastError: null },
    ];
    const reasons = attentionReasons({
      sources,
      resources: [
        resource({ source: 'old', lagDays: 40, failedWindows: [{ day: '2026-01-01', error: 'x' }] }),
      ],
      runs: [],
    });
    expect(reasons.map((a) => a.source)).toEqual(['new']);
    expect(reasons[0]?.reason).toBe('new: configured, never loaded; last error: API key rejected');
    expect(sourceStates(sources, reasons).map((s) => s.state)).toEqual(['never loaded', 'not configured']);
  });
});

describe('a loaded source that failed in the last run that asked it', () => {
  const lastRun = (overrides: Partial<SourceRun> = {}): SourceRun => ({
    runId: 8,
    trigger: 'sync',
    finishedAt: '2026-03-10T03:00:09.000Z',
    outcome: 'failed',
    windows: 12,
    failed: 14,
    error: 'API key rejected by http://api.test for source shop (HTTP 401)',
    ...overrides,
  });

  it('needs attention though no window of the ledger failed and a later run of another source ended ok', () => {
    const sources = [
      { ...loaded, lastRun: lastRun(), lastError: lastRun().error },
      { ...loaded, source: 'other', lastRun: lastRun({ runId: 9, outcome: 'ok', failed: 0, error: null }) },
    ];
    const reasons = attentionReasons({
      sources,
      resources: [resource(), resource({ source: 'other' })],
      runs: [run({ runId: 9 }), run({ runId: 8, status: 'partial' })],
    });
    expect(reasons).toEqual([
      {
        source: 'shop',
        runId: 8,
        reason:
          'shop: nothing loaded in its last run, 8 (sync): 14 failed; API key rejected by http://api.test for source shop (HTTP 401)',
        next: 'fix what the error names (`insights-sync check` tests the key and each endpoint), then `insights-sync sync --source shop`',
      },
    ]);
    expect(sourceStates(sources, reasons).map((s) => s.state)).toEqual(['needs attention', 'ok']);
  });

  it('one endpoint refused: not everything loaded', () => {
    const [reason] = attentionReasons({
      sources: [
        {
          ...loaded,
          lastRun: lastRun({
            outcome: 'partial',
            failed: 3,
            error: 'GET /v1/recordings refused with HTTP 403',
          }),
        },
      ],
      resources: [resource()],
      runs: [run()],
    });
    expect(reason?.reason).toBe(
      'shop: not everything loaded in its last run, 8 (sync): 3 failed; GET /v1/recordings refused with HTTP 403',
    );
  });

  it('nothing when its last run was ok or only interrupted, or it is no longer configured', () => {
    for (const s of [
      { ...loaded, lastRun: lastRun({ outcome: 'ok', failed: 0, error: null }) },
      { ...loaded, lastRun: lastRun({ outcome: 'interrupted', failed: 0, error: null }) },
      { ...loaded, configured: false, lastRun: lastRun() },
    ])
      expect(attentionReasons({ sources: [s], resources: [], runs: [run()] })).toEqual([]);
  });
});

describe("a source's outcome in a run, from its part of the run's summary", () => {
  const counts = (overrides: Partial<ResourceSummary>): Partial<ResourceSummary> => ({
    windows: 3,
    failedWindows: 0,
    skippedWindows: 0,
    errors: [],
    ...overrides,
  });

  it('ok when nothing failed and nothing was skipped', () => {
    expect(sourceRunOutcome({ feedback: counts({}), abtesting: counts({ windows: 0 }) })).toEqual({
      outcome: 'ok',
      windows: 3,
      failed: 0,
      error: null,
    });
  });

  it('failed when nothing loaded: every window and snapshot failed or was not attempted', () => {
    expect(
      sourceRunOutcome({
        feedback: counts({ failedWindows: 3, errors: ['API key rejected (HTTP 401)'] }),
        abtesting: counts({ windows: 0, failedWindows: 1, errors: ['API key rejected (HTTP 401)'] }),
      }),
    ).toEqual({ outcome: 'failed', windows: 3, failed: 4, error: 'API key rejected (HTTP 401)' });
  });

  it('partial when one resource failed and another loaded; a loaded snapshot counts as loaded', () => {
    expect(
      sourceRunOutcome({
        recordings: counts({ failedWindows: 3, errors: ['HTTP 403'] }),
        feedback: counts({}),
      }),
    ).toMatchObject({ outcome: 'partial', failed: 3, error: 'HTTP 403' });
    expect(
      sourceRunOutcome({
        recordings: counts({ failedWindows: 3, errors: ['HTTP 403'] }),
        heatmaps: counts({ windows: 0 }),
      }),
    ).toMatchObject({ outcome: 'partial' });
  });

  it('interrupted when windows were skipped at shutdown and none failed', () => {
    expect(sourceRunOutcome({ feedback: counts({ skippedWindows: 2 }) })).toMatchObject({
      outcome: 'interrupted',
      error: null,
    });
  });

  it('a summary recorded before a count existed, or without errors, still gives an outcome', () => {
    expect(sourceRunOutcome({ feedback: { windows: 2, failedWindows: 2 } })).toEqual({
      outcome: 'failed',
      windows: 2,
      failed: 2,
      error: 'unknown error',
    });
    expect(sourceRunOutcome({})).toEqual({ outcome: 'ok', windows: 0, failed: 0, error: null });
  });
});
