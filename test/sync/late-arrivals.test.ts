import { describe, expect, it } from 'vitest';
import {
  dayKey,
  describeLateArrivals,
  lateArrivalsOf,
  lookbackCovering,
  type NewOnDay,
} from '../../src/sync/late-arrivals.js';

const stored = (day: string, items: number, resource: NewOnDay['resource'] = 'feedback'): NewOnDay => ({
  source: 'main',
  resource,
  day,
  items,
});

describe('late arrivals', () => {
  it('are the items the run stored new on days read before, summed per resource and age of the day', () => {
    const readBefore = new Set([
      dayKey('main', 'feedback', '2026-03-07'),
      dayKey('main', 'feedback', '2026-03-08'),
      dayKey('main', 'survey', '2026-03-08'),
    ]);
    const late = lateArrivalsOf(
      [
        stored('2026-03-07', 2),
        stored('2026-03-08', 5),
        stored('2026-03-08', 1, 'survey'),
        // First read of the day: not late, however many items.
        stored('2026-03-09', 40),
        // Read before, nothing new.
        stored('2026-03-08', 0, 'survey'),
      ],
      readBefore,
      '2026-03-10',
    );
    expect(late).toEqual(
      expect.arrayContaining([
        { source: 'main', resource: 'feedback', dayAge: 3, items: 2 },
        { source: 'main', resource: 'feedback', dayAge: 2, items: 5 },
        { source: 'main', resource: 'survey', dayAge: 2, items: 1 },
      ]),
    );
    expect(late).toHaveLength(3);
  });

  it('the lookback that catches 99.9% is the age below which that share of the items fell', () => {
    expect(lookbackCovering([])).toBeNull();
    expect(lookbackCovering([{ dayAge: 2, items: 10 }])).toBe(2);
    // 999 of 1,000 items within 2 days: 2 days catch 99.9%; the one straggler does not move it.
    expect(
      lookbackCovering([
        { dayAge: 5, items: 1 },
        { dayAge: 1, items: 900 },
        { dayAge: 2, items: 99 },
      ]),
    ).toBe(2);
    // 2 stragglers of 1,000 do.
    expect(
      lookbackCovering([
        { dayAge: 1, items: 900 },
        { dayAge: 2, items: 98 },
        { dayAge: 5, items: 2 },
      ]),
    ).toBe(5);
  });

  it('are described with their spread, the lookback that catches them and the items at its edge', () => {
    const line = describeLateArrivals({
      source: 'main',
      resource: 'feedback',
      items: 12,
      byAge: [
        { dayAge: 2, items: 9 },
        { dayAge: 3, items: 3 },
      ],
      lookbackCovering: 3,
      lookbackDays: 3,
      atTheEdge: 3,
    });
    expect(line).toBe(
      '12 late (9 2 d old, 3 3 d old); a lookback of 3 days catches 99.9% (now 3); 3 on the oldest day re-read: older late items may be missed',
    );
  });
});
