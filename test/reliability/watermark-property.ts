import fc from 'fast-check';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { ApiClient } from '../../src/api/api-client.js';
import { ApiError } from '../../src/errors.js';
import { NEXT_DAYS_MOST } from '../../src/extract/reading-session.js';
import { silentLogger } from '../../src/log/logger.js';
import { runSync } from '../../src/sync/run-sync.js';
import type { TestDatabase } from '../helpers/database.js';
import { TEST_SETTINGS } from '../helpers/sync-harness.js';

/**
 * Guarantee 2 on the real orchestrator and a real database: random plans of 1-60 days, 1-8
 * windows in flight, random failures and random completion orders (each request answers after
 * its own random delay). Checked at every request: in one consistent read of the database, the
 * watermark is the end of the contiguous done prefix. Checked after the run: the next sync asks
 * for exactly the days not done, the lookback days, today, and the day after each stretch of days
 * it settles that it reads no window of; then the watermark is yesterday.
 *
 * Day arithmetic here is plain Date on a precomputed calendar, independent of src/time/days.
 */

const START = '2026-01-01';
const CALENDAR: string[] = Array.from({ length: 70 }, (_, i) =>
  new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10),
);
const dayAt = (i: number): string => {
  const day = CALENDAR[i];
  if (day === undefined) throw new RangeError(`calendar index ${i}`);
  return day;
};

export const watermarkScenario = fc.record({
  /** Closed days before today: today is START + days. */
  days: fc.integer({ min: 1, max: 60 }),
  concurrency: fc.integer({ min: 1, max: 8 }),
  /** Indexes (from START) of the days whose request fails. */
  failing: fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { maxLength: 8 }),
  /** Each request's answer is delayed by one of these (ms), picked by the day's index. */
  delays: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 16 }),
  lookbackDays: fc.integer({ min: 0, max: 5 }),
});

/** End of the run of done days that starts at START, or null: the reference of the invariant. */
function prefixEnd(done: ReadonlySet<string>, today: string): string | null {
  let end: string | null = null;
  for (const day of CALENDAR) {
    if (day >= today || !done.has(day)) break;
    end = day;
  }
  return end;
}

function fakeClient(
  name: string,
  onWindow: (day: string) => Promise<void>,
  outcome: (day: string) => 'ok' | 'fail',
): ApiClient {
  let requests = 0;
  return {
    source: name,
    baseUrl: 'http://fake.invalid',
    listTests: async () => [],
    testResults: async () => [],
    heatmaps: async () => [],
    requestCount: () => requests,
    window: async (resource, query, context) => {
      requests += 1;
      const day = context?.day ?? query.startdate;
      await onWindow(day);
      if (outcome(day) === 'fail')
        throw new ApiError('injected failure', { source: name, resource, day }, { retryable: false });
      return [];
    },
  };
}

export async function checkWatermarkProperty(t: TestDatabase, numRuns: number): Promise<void> {
  let runNumber = 0;
  await fc.assert(
    fc.asyncProperty(watermarkScenario, async (s) => {
      runNumber += 1;
      const source = `wm-${runNumber}-${Date.now().toString(36)}`;
      const today = dayAt(s.days);
      const failing = new Set(s.failing.map(dayAt));
      const now = () => new Date(`${today}T12:00:00.000Z`);
      let checks = 0;
      let delayIndex = 0;

      /** One statement, so one snapshot: the watermark and the ledger it must agree with. */
      const checkInvariant = async () => {
        const row = await sql<{ mark: string | null; done: string[] }>`
          select (select day from watermarks where source_id = ${source} and resource = 'feedback') as mark,
                 array(select day::text from sync_windows
                       where source_id = ${source} and resource = 'feedback' and status = 'done'
                       order by day) as done`.execute(t.db);
        const { mark, done } = row.rows[0] ?? { mark: null, done: [] };
        expect(mark ?? null).toBe(prefixEnd(new Set(done), today));
        checks += 1;
      };

      const settings = {
        ...TEST_SETTINGS,
        startDate: START,
        concurrency: s.concurrency,
        lookbackDays: s.lookbackDays,
      };
      const first = await runSync(
        {
          pool: t.pool,
          db: t.db,
          logger: silentLogger(),
          now,
          sources: [{ name: source, baseUrl: 'http://fake.invalid', apiKey: 'k' }],
          settings,
          createClient: () =>
            fakeClient(
              source,
              async () => {
                await checkInvariant();
                const delay = s.delays[delayIndex++ % s.delays.length] ?? 0;
                await new Promise((resolve) => setTimeout(resolve, delay));
              },
              (day) => (failing.has(day) ? 'fail' : 'ok'),
            ),
        },
        { trigger: 'sync', resources: ['feedback'] },
      );
      await checkInvariant();
      expect(first.windows).toHaveLength(s.days + 1);
      const closed = CALENDAR.slice(0, s.days);
      const done = new Set(closed.filter((day) => !failing.has(day)));
      const mark = prefixEnd(done, today);
      const stored = await t.db
        .selectFrom('watermarks')
        .select('day')
        .where('source_id', '=', source)
        .executeTakeFirst();
      expect(stored?.day ?? null).toBe(mark);

      // The next run asks for: every closed day not done, the lookback days before today
      // (whatever the watermark), and today; nothing else.
      const asked: string[] = [];
      const second = await runSync(
        {
          pool: t.pool,
          db: t.db,
          logger: silentLogger(),
          now,
          sources: [{ name: source, baseUrl: 'http://fake.invalid', apiKey: 'k' }],
          settings,
          createClient: () =>
            fakeClient(
              source,
              async (day) => {
                asked.push(day);
              },
              () => 'ok',
            ),
        },
        { trigger: 'sync', resources: ['feedback'] },
      );
      const expected = new Set([...closed.filter((day) => !done.has(day)), today]);
      for (let k = 1; k <= s.lookbackDays && s.days - k >= 0; k++) expected.add(dayAt(s.days - k));
      // And the day after each stretch of days it settles, where it reads no window (the run's
      // end: reading-session.ts, daysAfterStretches).
      const nextOf = (day: string) => CALENDAR[CALENDAR.indexOf(day) + 1] as string;
      const ends = [...expected]
        .filter((day) => day !== today && !expected.has(nextOf(day)) && nextOf(day) <= today)
        .sort()
        .reverse()
        .slice(0, NEXT_DAYS_MOST);
      for (const end of ends) expected.add(nextOf(end));
      // Which days, not how often: an empty day is asked twice (one empty answer settles nothing).
      expect([...new Set(asked)].sort()).toEqual([...expected].sort());
      expect(second.status).toBe('ok');
      const after = await t.db
        .selectFrom('watermarks')
        .select('day')
        .where('source_id', '=', source)
        .executeTakeFirst();
      expect(after?.day).toBe(dayAt(s.days - 1));
      expect(checks).toBeGreaterThan(s.days);
    }),
    { numRuns },
  );
}
