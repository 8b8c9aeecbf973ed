import { describe, expect, it } from 'vitest';
import { busyRange, dayCounts } from '../../bench/busy-site.js';
import { FULL, SMOKE } from '../../bench/suite.js';

describe("the busy-site benchmark's days", () => {
  it('are the same every run for the full benchmark, whatever the date it runs on', () => {
    const ranges = ['2026-12-04', '2027-03-15'].map((today) => busyRange(FULL.busySite, today));
    expect(ranges).toEqual([
      { from: '2026-11-27', to: '2026-12-03' },
      { from: '2026-11-27', to: '2026-12-03' },
    ]);
  });

  it('hold the case the section guards: a day above the cap, then a whole day and an empty one', () => {
    const counts = [...dayCounts('2026-11-27', '2026-12-03', FULL.busySite.perDay).values()];
    expect(counts.slice(0, 3).map((day) => day.feedback)).toEqual([16_520, 5_677, 0]);
  });

  it("are the full run's in the smoke too, so that CI meets the same days whatever its date", () => {
    expect(busyRange(SMOKE.busySite, '2027-01-20')).toEqual(busyRange(FULL.busySite, '2026-12-04'));
  });

  it('are the latest closed days with a day above the cap where none are fixed', () => {
    const options = { days: 2, perDay: 25_000, cap: 10_000 };
    const { from, to } = busyRange(options, '2026-12-04');
    expect(to <= '2026-12-03').toBe(true);
    const counts = [...dayCounts(from, to, options.perDay, 'plans').values()];
    expect(counts.some((day) => day.feedback > options.cap)).toBe(true);
  });

  it('are refused, naming them, where fixed days hold no day above the cap', () => {
    expect(() => busyRange({ days: 2, perDay: 10, cap: 10_000, lastDay: '2026-12-03' })).toThrow(
      'the 2 days to 2026-12-03 hold no day above 10000 of each resource',
    );
  });
});
