import { describe, expect, it } from 'vitest';
import { latestObservations, type VisitorObservation } from '../../src/load/visitors.js';
import { visitor } from '../webhooks/webhook-helpers.js';

const seen = (id: string, observedAt: string, name = 'Ada'): VisitorObservation => ({
  visitor: { ...visitor(id), name },
  observedAt,
});

describe('latestObservations: what the visitor upsert stages', () => {
  it("keeps each visitor's observations at its latest time, ties included, in their order", () => {
    const observations = [
      seen('a', '2026-03-01T10:00:00.000Z', 'old'),
      seen('b', '2026-03-01T09:00:00.000Z'),
      seen('a', '2026-03-01T12:00:00.000Z', 'tie-1'),
      seen('a', '2026-03-01T11:59:59.999Z', 'just before'),
      seen('a', '2026-03-01T12:00:00.000Z', 'tie-2'),
    ];
    expect(latestObservations(observations).map((o) => [o.visitor.id, o.visitor.name])).toEqual([
      ['b', 'Ada'],
      ['a', 'tie-1'],
      ['a', 'tie-2'],
    ]);
  });

  it('keeps every observation of a visitor when one of its times cannot be read here', () => {
    const observations = [
      seen('a', '2026-03-01T10:00:00.000Z'),
      seen('a', 'not a time'),
      seen('a', '2026-03-01T12:00:00.000Z'),
    ];
    expect(latestObservations(observations)).toHaveLength(3);
  });

  it('a busy day: 10,000 items of 400 visitors stage one observation each', () => {
    const observations = Array.from({ length: 10_000 }, (_, i) =>
      seen(`v-${i % 400}`, new Date(Date.UTC(2026, 2, 2, 0, 0, 0, i)).toISOString()),
    );
    const kept = latestObservations(observations);
    expect(kept).toHaveLength(400);
    expect(new Set(kept.map((o) => o.visitor.id)).size).toBe(400);
    expect(kept.every((o) => o.observedAt >= '2026-03-02T00:00:09.600Z')).toBe(true);
  });
});
