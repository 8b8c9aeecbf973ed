import { describe, expect, it } from 'vitest';
import {
  type AttentionInput,
  attentionReasons,
  MAX_LAG_DAYS,
  sourceStates,
} from '../../src/status/attention.js';

const loaded = { source: 'shop', configured: true, inWarehouse: true, lastError: null };
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
      { source: 'new', configured: true, inWarehouse: false, lastError: 'API key rejected' },
      { source: 'old', configured: false, inWarehouse: true, lastError: null },
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
