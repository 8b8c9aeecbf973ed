import type { SnapshotOutcome, WindowOutcome } from '../../src/sync/outcomes.js';

/** A window of the shop's feedback that read nothing and wrote nothing, with the fields a test names. */
export function windowOutcome(overrides: Partial<WindowOutcome> = {}): WindowOutcome {
  return {
    source: 'shop',
    resource: 'feedback',
    day: '2026-03-10',
    status: 'done',
    fetched: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    truncated: false,
    conflicts: 0,
    requests: 1,
    ...overrides,
  };
}

/** A read of the shop's heatmaps that found nothing, with the fields a test names. */
export function snapshotOutcome(overrides: Partial<SnapshotOutcome> = {}): SnapshotOutcome {
  return {
    source: 'shop',
    resource: 'heatmaps',
    status: 'done',
    fetched: 0,
    inserted: 0,
    updated: 0,
    unchanged: 0,
    rejected: 0,
    removed: 0,
    conflicts: 0,
    ...overrides,
  };
}
