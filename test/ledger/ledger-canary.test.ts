import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction } from '../../src/db/transaction.js';
import { recordProofs } from '../../src/ledger/ledger.js';
import { ledgerCanaries, settledDaysOfRun } from '../../src/ledger/read.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackItem } from '../load/window-items.js';

/**
 * What a queued run's planner proves its workers' last days by (src/sync/queue-proof.ts): the
 * days of the run no proof has proved, and a canary from the ledger, a day a proof found whole
 * with the times of exactly the items the API served of it.
 */

const SOURCE = 'canary';
const KEY = { source: SOURCE, resource: 'feedback' as const };

describe('the ledger’s canary and unproved days of a queued run', () => {
  let t: TestDatabase;
  let RUN: number;

  beforeAll(async () => {
    t = await createTestDatabase();
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running' })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    RUN = Number(run.run_id);
  });
  afterAll(async () => {
    await t.drop();
  });

  const store = (
    day: string,
    count: number,
    options: { truncated?: boolean; runId?: number | null; servedCount?: number; source?: string } = {},
  ) =>
    storeWindow(t.pool, {
      sourceId: options.source ?? SOURCE,
      baseUrl: 'http://api.example.test',
      resource: 'feedback',
      day: day as DayString,
      status: 'done',
      valid: Array.from({ length: count }, (_, i) => feedbackItem(day as DayString, i + 1 + count * 100)),
      rejected: [],
      requestedLimit: 1000,
      servedCount: options.servedCount ?? count,
      settledUnder: { startdate: day as DayString, enddate: day as DayString },
      truncated: options.truncated ?? false,
      runId: options.runId === undefined ? RUN : options.runId,
      startDay: '2026-03-01' as DayString,
      today: '2026-03-20' as DayString,
    });
  const prove = (days: string[]) =>
    inTransaction(t.pool, (trx) =>
      recordProofs(
        trx,
        { sourceId: SOURCE, resource: 'feedback' },
        { reopened: [], proved: days as DayString[] },
      ),
    );

  it('names the run’s days not proved, and picks the largest proved day that fits, with its items’ times', async () => {
    await store('2026-03-02', 40);
    await store('2026-03-03', 55);
    await store('2026-03-04', 300);
    await store('2026-03-05', 20, { truncated: true });
    await store('2026-03-06', 30);
    await store('2026-03-07', 25, { runId: null });
    await prove(['2026-03-02', '2026-03-03', '2026-03-04', '2026-03-05', '2026-03-07']);
    const unproved = async (before: string) =>
      (await settledDaysOfRun(t.db, KEY, RUN, before as DayString))
        .filter((d) => !d.proved)
        .map((d) => d.day);
    expect(await unproved('2026-03-20')).toEqual(['2026-03-06']);
    expect(await unproved('2026-03-06')).toEqual([]);

    // 300 items do not fit; a truncated day is no canary; 55 is the largest of the run's; the day
    // of no run (25) was proved too, the run's unproved day (30) comes after both.
    const canaries = await ledgerCanaries(t.db, KEY, RUN, 100);
    expect(canaries.map(({ day, proved }) => [day, proved])).toEqual([
      ['2026-03-03', true],
      ['2026-03-02', true],
      ['2026-03-07', true],
    ]);
    const canary = canaries[0];
    expect(canary?.times).toHaveLength(55);
    const stored = Array.from({ length: 55 }, (_, i) =>
      Date.parse(feedbackItem('2026-03-03' as DayString, i + 5501).dt),
    );
    expect([...(canary?.times ?? [])].sort()).toEqual(stored.sort());
  });

  it('passes over a day whose rows are not what the API served (a row a webhook brought alone)', async () => {
    await t.db
      .insertInto('feedback')
      .values({
        source_id: SOURCE,
        id: 999_001,
        feedback_id: 1,
        dt: '2026-03-03T23:00:00.000Z',
        raw: JSON.stringify({}),
        origin: 'webhook',
      })
      .execute();
    expect((await ledgerCanaries(t.db, KEY, RUN, 100))[0]?.day).toBe('2026-03-03');
    // The same row as if the API had served it: the day holds 56 rows for 55 settled.
    await t.db.updateTable('feedback').set({ origin: 'api' }).where('id', '=', 999_001).execute();
    expect((await ledgerCanaries(t.db, KEY, RUN, 100))[0]?.day).toBe('2026-03-02');
  });

  it('says which days were read in parts: more items than their largest answer served (halves, time slices)', async () => {
    const parts = { ...KEY, source: 'canary-parts' };
    // One answer of 140 held the day (its neighbours too); three answers of at most 100 held 260.
    await store('2026-04-01', 120, { servedCount: 140, source: parts.source });
    await store('2026-04-02', 260, { servedCount: 100, source: parts.source });
    const settled = await settledDaysOfRun(t.db, parts, RUN, '2026-04-10' as DayString);
    expect(settled.map(({ day, parts, under }) => [day, parts, under?.startdate])).toEqual([
      ['2026-04-01', false, '2026-04-01'],
      ['2026-04-02', true, '2026-04-02'],
    ]);
  });

  it('where no proof found a day whole, offers the run’s own settled days, largest first, as unproved', async () => {
    const run = await t.db
      .insertInto('sync_runs')
      .values({ trigger: 'backfill', status: 'running' })
      .returning('run_id')
      .executeTakeFirstOrThrow();
    const other = { ...KEY, source: 'canary-first' };
    const storeOther = (day: string, count: number, truncated = false) =>
      storeWindow(t.pool, {
        sourceId: other.source,
        baseUrl: 'http://api.example.test',
        resource: 'feedback',
        day: day as DayString,
        status: 'done',
        valid: Array.from({ length: count }, (_, i) =>
          feedbackItem(day as DayString, i + 1 + count * 100 + 50_000),
        ),
        rejected: [],
        requestedLimit: 1000,
        servedCount: count,
        truncated,
        runId: Number(run.run_id),
        startDay: '2026-03-01' as DayString,
        today: '2026-03-20' as DayString,
      });
    await storeOther('2026-03-10', 21);
    await storeOther('2026-03-11', 86);
    await storeOther('2026-03-12', 120, true);
    await storeOther('2026-03-13', 40);
    const canaries = await ledgerCanaries(t.db, other, Number(run.run_id), 99);
    expect(canaries.map(({ day, proved, times }) => [day, proved, times.length])).toEqual([
      ['2026-03-11', false, 86],
      ['2026-03-13', false, 40],
      ['2026-03-10', false, 21],
    ]);
    // Another run's unproved days are no canary of this one.
    expect(await ledgerCanaries(t.db, other, RUN, 99)).toEqual([]);
  });
});
