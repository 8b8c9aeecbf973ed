import { describe, expect, it } from 'vitest';
import { countResponse } from '../../src/sync/outcomes.js';
import { RunGate } from '../../src/sync/run-gate.js';
import { chosenSources, oldestFirst } from '../../src/sync/run-sync.js';
import { snapshotOutcome, windowOutcome } from '../helpers/outcomes.js';

describe('what stops the work of a run', () => {
  it('a rejected key stops every resource of its source, and only of its source', () => {
    const gate = new RunGate();
    expect(gate.settle(windowOutcome({ status: 'failed', fatal: true, error: 'HTTP 401' }))).toBe(false);
    expect(gate.skipped('shop', 'feedback')).toBe(true);
    expect(gate.skipped('shop', 'heatmaps')).toBe(true);
    expect(gate.skipped('blog', 'feedback')).toBe(false);
  });

  it('a refused endpoint stops that resource only, and is news the first time only', () => {
    const gate = new RunGate();
    const refused = windowOutcome({ status: 'failed', refused: 403, error: 'HTTP 403' });
    expect(gate.settle(refused)).toBe(true);
    expect(gate.settle({ ...refused, day: '2026-03-11' })).toBe(false);
    expect(gate.skipped('shop', 'feedback')).toBe(true);
    expect(gate.skipped('shop', 'survey')).toBe(false);
  });

  it('a shutdown stops everything not started yet', () => {
    const stop = new AbortController();
    const gate = new RunGate(stop.signal);
    expect(gate.skipped('shop', 'feedback')).toBe(false);
    stop.abort();
    expect(gate.skipped('shop', 'feedback')).toBe(true);
  });

  it('403 from every endpoint asked is a rejected key: the source turns fatal, with one line', () => {
    const gate = new RunGate();
    const windows = [windowOutcome({ status: 'failed', refused: 403, error: 'HTTP 403' })];
    const snapshots = [snapshotOutcome({ status: 'failed', refused: 403, error: 'HTTP 403' })];
    const rejected = gate.rejectForbiddenEverywhere(
      [{ name: 'shop', baseUrl: 'http://shop.test' }],
      windows,
      snapshots,
    );
    expect(rejected.map((r) => r.source)).toEqual(['shop']);
    expect(gate.fatal.get('shop')).toBe(rejected[0]?.error);
    expect(windows[0]?.fatal).toBe(true);
    expect(snapshots[0]?.fatal).toBe(true);
    // Said once: a source already fatal is not rejected again.
    expect(gate.rejectForbiddenEverywhere([{ name: 'shop', baseUrl: 'x' }], windows, snapshots)).toEqual([]);
  });

  it('one refused endpoint next to one that loaded is a scope, not a rejected key', () => {
    const gate = new RunGate();
    const rejected = gate.rejectForbiddenEverywhere(
      [{ name: 'shop', baseUrl: 'http://shop.test' }],
      [windowOutcome({ status: 'failed', refused: 403, error: 'HTTP 403' })],
      [snapshotOutcome({ status: 'done' })],
    );
    expect(rejected).toEqual([]);
    expect(gate.fatal.size).toBe(0);
  });

  it('skipped outcomes of a stopped source or endpoint say why; those of a shutdown do not', () => {
    const gate = new RunGate();
    gate.settle(windowOutcome({ source: 'shop', status: 'failed', fatal: true, error: 'key rejected' }));
    gate.settle(
      windowOutcome({
        source: 'blog',
        resource: 'survey',
        status: 'failed',
        refused: 404,
        error: 'HTTP 404',
      }),
    );
    const outcomes = [
      windowOutcome({ source: 'shop', status: 'skipped' }),
      windowOutcome({ source: 'blog', resource: 'survey', status: 'skipped' }),
      windowOutcome({ source: 'blog', resource: 'feedback', status: 'skipped' }),
    ];
    gate.markNotAttempted(outcomes);
    expect(outcomes.map((o) => [o.notAttempted, o.error])).toEqual([
      [true, 'key rejected'],
      [true, 'HTTP 404'],
      [undefined, undefined],
    ]);
  });
});

describe('planning a run', () => {
  it('takes the sources a request names, or all of them', () => {
    const sources = [
      { name: 'shop', baseUrl: 'http://shop.test', apiKey: 'k' },
      { name: 'blog', baseUrl: 'http://blog.test', apiKey: 'k' },
    ] as Parameters<typeof chosenSources>[0];
    expect(chosenSources(sources, undefined).map((s) => s.name)).toEqual(['shop', 'blog']);
    expect(chosenSources(sources, ['blog']).map((s) => s.name)).toEqual(['blog']);
  });

  it('orders windows oldest day first across resources', () => {
    const plans = [
      { day: '2026-03-12', resource: 'feedback' },
      { day: '2026-03-10', resource: 'survey' },
      { day: '2026-03-11', resource: 'feedback' },
    ] as const;
    expect(oldestFirst([...plans]).map((p) => p.day)).toEqual(['2026-03-10', '2026-03-11', '2026-03-12']);
  });

  it('counts responses by status, a missing answer as none', () => {
    const byStatus: Record<string, number> = {};
    countResponse(byStatus, 200);
    countResponse(byStatus, 200);
    countResponse(byStatus, null);
    expect(byStatus).toEqual({ '200': 2, none: 1 });
  });
});
