import { afterEach, describe, expect, it } from 'vitest';
import {
  addDays,
  DAY_MS,
  dayDiff,
  dayOfTime,
  dayStartMs,
  daysFrom,
  maxDay,
  minDay,
  todayUtc,
} from '../../src/time/days.js';

describe('addDays', () => {
  it.each([
    ['2026-01-31', 1, '2026-02-01'],
    ['2026-04-30', 1, '2026-05-01'],
    ['2025-12-31', 1, '2026-01-01'],
    ['2026-01-01', -1, '2025-12-31'],
    ['2024-02-28', 1, '2024-02-29'],
    ['2024-02-29', 1, '2024-03-01'],
    ['2024-03-01', -1, '2024-02-29'],
    ['2023-02-28', 1, '2023-03-01'],
    ['2000-02-28', 1, '2000-02-29'],
    ['2100-02-28', 1, '2100-03-01'],
    ['2024-02-29', 365, '2025-02-28'],
    ['2026-03-10', 0, '2026-03-10'],
  ])('%s %+d days is %s', (day, days, expected) => {
    expect(addDays(day, days)).toBe(expected);
  });

  it('walks days as a Date does, the same days again and past the days it keeps (it keeps 10,000)', () => {
    const first = Date.parse('1960-01-01T00:00:00.000Z');
    for (const pass of [1, 2])
      for (let i = 0, day = '1960-01-01'; i < 12_000; i++, day = addDays(day, 1))
        expect(day, `pass ${pass}`).toBe(new Date(first + i * DAY_MS).toISOString().slice(0, 10));
    expect(addDays('2026-03-10', -12_000)).toBe(
      new Date(Date.parse('2026-03-10') - 12_000 * DAY_MS).toISOString().slice(0, 10),
    );
  });

  it('rejects a string that is not a calendar day', () => {
    expect(() => addDays('2026-02-30', 1)).toThrow(RangeError);
    expect(() => addDays('yesterday', 1)).toThrow(RangeError);
  });
});

describe('dayStartMs', () => {
  it("is the day's UTC midnight, asked again or past the days it keeps (it keeps 10,000)", () => {
    const first = Date.parse('1990-01-01T00:00:00.000Z');
    for (let round = 0; round < 2; round++)
      for (let i = 0; i < 25_000; i += 2) {
        const day = new Date(first + i * DAY_MS).toISOString().slice(0, 10);
        expect(dayStartMs(day)).toBe(first + i * DAY_MS);
      }
  });

  it('rejects a string that is not a calendar day, each time it is asked', () => {
    for (let i = 0; i < 2; i++) {
      expect(() => dayStartMs('2026-02-30')).toThrow(RangeError);
      expect(() => dayStartMs('2026-3-1')).toThrow(RangeError);
    }
  });
});

describe('daysFrom', () => {
  it('includes both ends', () => {
    expect(daysFrom('2024-02-27', '2024-03-01')).toEqual([
      '2024-02-27',
      '2024-02-28',
      '2024-02-29',
      '2024-03-01',
    ]);
  });

  it('is one day when from equals to', () => {
    expect(daysFrom('2026-03-10', '2026-03-10')).toEqual(['2026-03-10']);
  });

  it('is empty when from is after to', () => {
    expect(daysFrom('2026-03-11', '2026-03-10')).toEqual([]);
  });

  it('crosses a year boundary', () => {
    expect(daysFrom('2025-12-30', '2026-01-02')).toEqual([
      '2025-12-30',
      '2025-12-31',
      '2026-01-01',
      '2026-01-02',
    ]);
  });
});

describe('dayDiff', () => {
  it.each([
    ['2026-03-10', '2026-03-10', 0],
    ['2024-02-28', '2024-03-01', 2],
    ['2023-02-28', '2023-03-01', 1],
    ['2026-03-10', '2026-03-07', -3],
    ['2024-01-01', '2025-01-01', 366],
    ['2025-01-01', '2026-01-01', 365],
    // US and EU daylight-saving switches: whole days in UTC, never 23 or 25 hours.
    ['2026-03-07', '2026-03-09', 2],
    ['2026-10-24', '2026-10-26', 2],
  ])('from %s to %s is %d', (from, to, expected) => {
    expect(dayDiff(from, to)).toBe(expected);
  });
});

describe('minDay and maxDay', () => {
  it('pick the earlier and the later day', () => {
    expect(minDay('2026-03-10', '2025-12-31')).toBe('2025-12-31');
    expect(maxDay('2026-03-10', '2025-12-31')).toBe('2026-03-10');
  });
});

describe('todayUtc', () => {
  const originalTz = process.env.TZ;
  afterEach(() => {
    if (originalTz === undefined) delete process.env.TZ;
    else process.env.TZ = originalTz;
  });

  it('is the UTC calendar day of the given instant', () => {
    expect(todayUtc(new Date('2026-01-01T00:00:00.000Z'))).toBe('2026-01-01');
    expect(todayUtc(new Date('2025-12-31T23:59:59.999Z'))).toBe('2025-12-31');
    // 23:30 in New York is already the next day in UTC.
    expect(todayUtc(new Date('2026-03-10T23:30:00-05:00'))).toBe('2026-03-11');
    // 00:30 in Kiritimati (UTC+14) is still the previous day in UTC.
    expect(todayUtc(new Date('2026-03-11T00:30:00+14:00'))).toBe('2026-03-10');
  });

  it('does not depend on the TZ environment variable', () => {
    const instants = ['2026-03-10T23:30:00.000Z', '2026-03-11T00:30:00.000Z', '2024-02-29T12:00:00.000Z'];
    const expected = ['2026-03-10', '2026-03-11', '2024-02-29'];
    for (const tz of ['UTC', 'America/Adak', 'Pacific/Kiritimati', 'Asia/Kolkata', 'Europe/Amsterdam']) {
      process.env.TZ = tz;
      expect(
        instants.map((iso) => todayUtc(new Date(iso))),
        tz,
      ).toEqual(expected);
    }
    // The zone really changed: far east and far west, local days differ from the UTC ones.
    process.env.TZ = 'Pacific/Kiritimati';
    expect(new Date('2026-03-10T23:30:00.000Z').getDate()).toBe(11);
    process.env.TZ = 'America/Adak';
    expect(new Date('2026-03-11T00:30:00.000Z').getDate()).toBe(10);
  });
});

describe('dayOfTime', () => {
  it('is the UTC day toISOString gives, for instants in any order, across midnights and before 1970', () => {
    const instants = [
      Date.parse('2026-03-01T00:00:00.000Z'),
      Date.parse('2026-03-01T23:59:59.999Z'),
      Date.parse('2026-03-02T00:00:00.000Z'),
      Date.parse('2026-03-01T12:00:00.000Z'),
      Date.parse('1969-12-31T23:59:59.999Z'),
      Date.parse('1970-01-01T00:00:00.000Z'),
      Date.parse('0001-01-01T00:00:00.000Z'),
    ];
    for (let i = 0; i < 2_000; i++) instants.push(Math.round((Math.random() - 0.3) * 4e12));
    for (const ms of instants)
      expect(dayOfTime(ms), String(ms)).toBe(new Date(ms).toISOString().slice(0, 10));
  });
});
