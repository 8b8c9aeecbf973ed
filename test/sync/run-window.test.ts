import { describe, expect, it } from 'vitest';
import { RequestAbortedError } from '../../src/api/abort.js';
import { AuthError, EndpointRefusedError } from '../../src/errors.js';
import type { FetchedDay } from '../../src/extract/plan-steps.js';
import {
  CHANGED_DAY_LINE,
  failureKind,
  loadedWindow,
  logLoad,
  TRUNCATED_DAY_LINE,
} from '../../src/sync/run-window.js';
import { captureLogger } from '../api/fixture-server.js';

describe('what a window that threw comes to', () => {
  it('a rejected key fails the whole source', () => {
    expect(failureKind(new AuthError('http://shop.test', 'shop', 401), false)).toBe('rejected key');
  });

  it('requests cut short by a shutdown skip the window; cut short otherwise they fail it', () => {
    const aborted = new RequestAbortedError('GET /feedback', undefined);
    expect(failureKind(aborted, true)).toBe('shutdown');
    expect(failureKind(aborted, false)).toBe('failed');
  });

  it('a refused endpoint is a refusal, said once by the run; anything else a failure', () => {
    const refused = new EndpointRefusedError('/recordings', 'shop', 403, 'recordings', {});
    expect(failureKind(refused, false)).toBe('refused');
    expect(failureKind(new Error('boom'), true)).toBe('failed');
  });
});

describe('the outcome of a stored window', () => {
  it('counts the day apart from its neighbours, and what the load set aside, moved or found missing', () => {
    const loaded = {
      inserted: 3,
      updated: 1,
      unchanged: 2,
      duplicates: 1,
      conflicts: 0,
      visitors: { inserted: 0, updated: 0, unchanged: 0, conflicts: 0 },
      suppressed: 1,
      missingUpstream: 2,
      withheld: 1,
      collisions: 1,
      moves: 1,
    } as Parameters<typeof loadedWindow>[3];
    const outcome = loadedWindow(
      { source: 'shop', resource: 'feedback', day: '2026-03-10' },
      'done',
      { total: 9, rejected: [{}], neighbours: 4 },
      loaded,
      { neighboursAdded: 2, truncated: false, requests: 3 },
    );
    expect(outcome).toEqual({
      source: 'shop',
      resource: 'feedback',
      day: '2026-03-10',
      status: 'done',
      fetched: 9,
      inserted: 3,
      updated: 1,
      unchanged: 2,
      rejected: 1,
      setAside: 1,
      duplicates: 1,
      suppressed: 1,
      neighbours: 4,
      neighboursAdded: 2,
      truncated: false,
      conflicts: 0,
      collisions: 1,
      moves: 1,
      missingUpstream: 2,
      requests: 3,
    });
  });

  it('a load that knows nothing of keys elsewhere counts none set aside, collided or moved', () => {
    const loaded = {
      inserted: 0,
      updated: 0,
      unchanged: 0,
      duplicates: 0,
      conflicts: 0,
      visitors: { inserted: 0, updated: 0, unchanged: 0, conflicts: 0 },
      suppressed: 0,
      missingUpstream: 0,
    } as Parameters<typeof loadedWindow>[3];
    const outcome = loadedWindow(
      { source: 'shop', resource: 'feedback', day: '2026-03-12' },
      'open',
      { total: 0, rejected: [], neighbours: 0 },
      loaded,
      { neighboursAdded: 0, truncated: true, requests: 1 },
    );
    expect(outcome).toMatchObject({ status: 'open', setAside: 0, collisions: 0, moves: 0, truncated: true });
  });
});

describe('what a stored window tells the operator', () => {
  const warnings = (lines: string[]) =>
    lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.level === 'warn');
  const loaded = { conflicts: 0, collisions: 0, missingUpstream: 0 } as Parameters<typeof logLoad>[3];
  const fetched = (truncated: boolean): FetchedDay => ({
    onDay: [],
    otherDays: [],
    // Under a rolling deploy of a maximum limit: no answer reached the last limit asked.
    requestedLimit: 299,
    servedCount: 258,
    truncated,
    requests: 9,
  });

  it('a day flagged truncated: one warning naming both causes, with the limit, the largest answer and the items', () => {
    const { lines, logger } = captureLogger();
    logLoad(logger, fetched(true), 0, loaded);
    const warned = warnings(lines);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ msg: TRUNCATED_DAY_LINE, limit: 299, served: 258, items: 0 });
    // Not "served no more than its cap": 258 items is neither this limit nor, here, any cap.
    expect(TRUNCATED_DAY_LINE).toContain('stayed at the limit or the server cap');
    expect(TRUNCATED_DAY_LINE).toContain('came back short while the server changed how it answers');
  });

  it('a day flagged while the server changed how it answers: one warning that says so, and that it is read again first', () => {
    const { lines, logger } = captureLogger();
    logLoad(logger, { ...fetched(true), readAgain: true }, 0, loaded);
    const warned = warnings(lines);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ msg: CHANGED_DAY_LINE, limit: 299, served: 258, items: 0 });
    expect(CHANGED_DAY_LINE).toContain('while the server changed how it answers');
    expect(CHANGED_DAY_LINE).toContain('read again first');
  });

  it('a day read whole: no warning', () => {
    const { lines, logger } = captureLogger();
    logLoad(logger, fetched(false), 258, loaded);
    expect(lines).not.toEqual([]);
    expect(warnings(lines)).toEqual([]);
  });
});
