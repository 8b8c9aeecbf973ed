/**
 * Targets 2, 3 and 6, load throughput: `items` feedback items (each with its visitor and its raw
 * JSON, about 750 bytes) loaded
 * - by a plain COPY into the empty feedback table of a fresh warehouse (the physical limit);
 * - by the real loader, window by window, in the transactions the sync uses (one at a time, then
 *   as many at once as a default sync runs);
 * - by the real loader again with nothing changed (the no-op re-sync), then with 10% changed;
 * - by Kysely multi-row VALUES upserts, and row by row (the naive baseline).
 * Each in a fresh warehouse (a clone of the migrated template), after a CHECKPOINT.
 */
import { sql } from 'kysely';
import pLimit from 'p-limit';
import type pg from 'pg';
import { createPool } from '../src/db/connection.js';
import { inTransaction } from '../src/db/transaction.js';
import { feedbackRow, feedbackSpec } from '../src/load/feedback.js';
import { ensureSource } from '../src/load/sources.js';
import type { Feedback } from '../src/schemas/feedback.js';
import { generateDataset } from '../src/simulator/server.js';
import { storeWindow } from '../src/sync/store-window.js';
import { addDays, todayUtc } from '../src/time/days.js';
import { BENCH_SCHEMA, type BenchDatabase, type BenchServer } from './database.js';
import { type Benchmark, percent, type RunResult } from './figures.js';
import { loadMultiRow, loadRowByRow } from './load-naive.js';

export interface LoadOptions {
  items: number;
  /** Windows in flight in the parallel variant: a default sync's 2 x INSIGHTS_CONCURRENCY. */
  parallelWindows: number;
  /**
   * Items the naive variants load (the first windows holding that many; 0 skips them): row by
   * row takes minutes over the full size, and as a rate against the same COPY it needs fewer.
   */
  naiveItems: number;
}

export const SOURCE = 'bench';
const BASE_URL = 'http://api.bench.test';
/**
 * A busy site's windows (bench/busy-site.ts): days above the server's cap of 10,000 items
 * (INSIGHTS_MAX_LIMIT's default), of which a whole-day reading gets the first 10,000. 20 windows
 * for 200,000 items. A mean of 20,000 a day puts most days above the cap; the others are skipped.
 */
export const WINDOW_ITEMS = 10_000;
const FEEDBACK_PER_DAY = 20_000;

export const load: Benchmark<LoadOptions> = {
  name: 'load',
  targets: '2, 3, 6',
  figures: ({ items, naiveItems }) => {
    const changed = changedCount(items);
    const naiveSize = `over ${naiveItems.toLocaleString('en-US')} items`;
    return [
      { key: 'windows', label: 'windows (days of feedback)', unit: '', digits: 0 },
      { key: 'copyRowsPerS', label: 'plain COPY, 1 stream (the physical limit)', unit: 'rows/s', digits: 0 },
      { key: 'copy2RowsPerS', label: 'plain COPY, 2 streams at once', unit: 'rows/s', digits: 0 },
      {
        key: 'parallelRowsPerS',
        label: 'loader as the sync runs it (8 windows in flight)',
        unit: 'rows/s',
        digits: 0,
      },
      {
        key: 'parallelShare',
        label: 'loader as the sync runs it / COPY',
        unit: '%',
        digits: 1,
        target: { text: '≥ 85%', met: (s) => s.median >= 85 },
      },
      { key: 'parallelShare2', label: 'loader as the sync runs it / COPY, 2 streams', unit: '%', digits: 1 },
      {
        key: 'lockWaitShare',
        label: 'loader as the sync runs it: its statements waiting for a lock another holds',
        unit: '%',
        digits: 1,
      },
      {
        key: 'extendWaitShare',
        label: 'loader as the sync runs it: its statements waiting to extend a table or an index',
        unit: '%',
        digits: 1,
      },
      { key: 'twoRowsPerS', label: 'loader, 2 windows in flight', unit: 'rows/s', digits: 0 },
      { key: 'twoShare', label: 'loader, 2 windows in flight / COPY', unit: '%', digits: 1 },
      { key: 'loaderRowsPerS', label: 'loader, 1 window at a time', unit: 'rows/s', digits: 0 },
      { key: 'loaderShare', label: 'loader, 1 window at a time / COPY', unit: '%', digits: 1 },
      { key: 'firstWalMb', label: 'WAL written by the first load', unit: 'MB', digits: 1 },
      { key: 'noopRowsPerS', label: 'no-op re-load (nothing changed)', unit: 'rows/s', digits: 0 },
      {
        key: 'noopUpdated',
        label: 'no-op re-load: tuples updated (feedback + visitors)',
        unit: '',
        digits: 0,
        target: { text: '0 in every run', met: (s) => s.max === 0 },
      },
      {
        key: 'noopWalShare',
        label: 'no-op re-load: WAL / first load WAL',
        unit: '%',
        digits: 2,
        target: { text: '≤ 2%', met: (s) => s.median <= 2 },
      },
      {
        key: 'changedUpdated',
        label: `re-load with 10% changed: feedback tuples updated (${changed} changed)`,
        unit: '',
        digits: 0,
        target: { text: `= ${changed} in every run`, met: (s) => s.min === changed && s.max === changed },
      },
      {
        key: 'changedOthers',
        label: 're-load with 10% changed: other tuples updated (visitors)',
        unit: '',
        digits: 0,
        target: { text: '0 in every run', met: (s) => s.max === 0 },
      },
      {
        key: 'multiRowRowsPerS',
        label: `Kysely multi-row VALUES upsert (1,000 rows/statement), ${naiveSize}`,
        unit: 'rows/s',
        digits: 0,
      },
      { key: 'multiRowShare', label: 'Kysely multi-row VALUES upsert / COPY', unit: '%', digits: 1 },
      {
        key: 'rowByRowRowsPerS',
        label: `naive baseline: row by row, ${naiveSize}`,
        unit: 'rows/s',
        digits: 0,
      },
      { key: 'rowByRowShare', label: 'naive baseline: row by row / COPY', unit: '%', digits: 1 },
    ];
  },
};

/** The first windows, in order, that hold at least `items` items between them (all if fewer). */
export function firstWindowsHolding(windows: readonly Window[], items: number): Window[] {
  const chosen: Window[] = [];
  let held = 0;
  for (const window of windows) {
    if (held >= items) break;
    chosen.push(window);
    held += window.items.length;
  }
  return chosen;
}

export interface Window {
  day: string;
  items: Feedback[];
}

/**
 * `items` generated feedback items in windows of WINDOW_ITEMS, one UTC day each, oldest first
 * within the day as a capped whole-day reading gets them (the last window cut short to make the
 * count exact).
 */
export function feedbackWindows(items: number): Window[] {
  const from = '2025-01-01';
  // About 60% of days reach the cap: four times the windows needed is always enough.
  const days = Math.max(4, Math.ceil((4 * items) / WINDOW_ITEMS));
  const dataset = generateDataset({
    seed: 7,
    from,
    to: addDays(from, days - 1),
    volume: {
      feedbackPerDay: FEEDBACK_PER_DAY,
      surveyPerDay: 0,
      recordingsPerDay: 0,
      busyDayFeedback: FEEDBACK_PER_DAY,
    },
  });
  const windows: Window[] = [];
  let left = items;
  for (const day of dataset.days) {
    if (left === 0) break;
    const all = dataset.day(day).feedback;
    if (all.length < WINDOW_ITEMS) continue;
    const feedback = all.slice(0, Math.min(left, WINDOW_ITEMS));
    // Copies: the dataset's day cache shares its arrays, and a variant edits items.
    windows.push({ day, items: feedback.map((item) => ({ ...item })) });
    left -= feedback.length;
  }
  if (left > 0) throw new Error(`could not generate ${items} feedback items`);
  return windows;
}

export function changedCount(items: number): number {
  return Math.floor(items / 10);
}

/** Every 10th item with another comment: what an edit on the service looks like to the sync. */
export function withChanges(windows: readonly Window[]): Window[] {
  let n = 0;
  return windows.map(({ day, items }) => ({
    day,
    items: items.map((item) => {
      n += 1;
      return n % 10 === 0 ? { ...item, comment: `${item.comment} (edited)` } : item;
    }),
  }));
}

interface LoadTotals {
  inserted: number;
  updated: number;
  unchanged: number;
}

/**
 * The load half of a window: the sync's own window transaction (src/sync/store-window.ts), with the
 * source row, the items and their visitors, the rejects, the ledger row and the watermark.
 */
export async function loadWindow(
  pool: pg.Pool,
  window: Window,
  startDay: string,
  runId: number | null = null,
): Promise<LoadTotals> {
  return storeWindow(pool, {
    sourceId: SOURCE,
    baseUrl: BASE_URL,
    resource: 'feedback',
    day: window.day,
    status: 'done',
    valid: window.items,
    rejected: [],
    requestedLimit: 10_000,
    servedCount: window.items.length,
    truncated: false,
    runId,
    startDay,
    today: todayUtc(new Date()),
  });
}

/**
 * The windows loaded as one run of the sync loads them: under a run of their own, as each run's
 * windows are (store_window checks a whole answer against what the run stored: migration 0053).
 */
async function loadAll(pool: pg.Pool, windows: readonly Window[], inFlight: number): Promise<LoadTotals> {
  const limit = pLimit(inFlight);
  const startDay = windows[0]?.day ?? '2025-01-01';
  const { rows } = await pool.query<{ run_id: string }>(
    "insert into sync_runs (trigger, status) values ('backfill', 'running') returning run_id",
  );
  const runId = Number(rows[0]?.run_id);
  const counts = await Promise.all(windows.map((w) => limit(() => loadWindow(pool, w, startDay, runId))));
  return counts.reduce(
    (sum, c) => ({
      inserted: sum.inserted + c.inserted,
      updated: sum.updated + c.updated,
      unchanged: sum.unchanged + c.unchanged,
    }),
    { inserted: 0, updated: 0, unchanged: 0 },
  );
}

/** The load's statements seen running, summed over the samples; of those, waiting for a lock; of those, to extend a relation. */
interface WaitSamples {
  active: number;
  locked: number;
  extending: number;
}

/**
 * Samples pg_stat_activity every 20 ms on `pool` (a connection apart from the load's) until
 * stopped: the load's statements running, those waiting for a lock another backend holds (a
 * heavyweight lock or an LWLock: a buffer, the WAL), and of those the lock PostgreSQL takes to add
 * a page to a table or an index (wait_event 'extend'), which one backend at a time holds per relation.
 */
function sampleWaits(pool: pg.Pool): { stop: () => void; done: Promise<WaitSamples> } {
  let stopped = false;
  const samples: WaitSamples = { active: 0, locked: 0, extending: 0 };
  const done = (async () => {
    while (!stopped) {
      const { rows } = await pool.query<WaitSamples>(
        `select count(*)::int as active,
                count(*) filter (where wait_event_type in ('Lock', 'LWLock'))::int as locked,
                count(*) filter (where wait_event_type = 'Lock' and wait_event = 'extend')::int as extending
           from pg_stat_activity
          where application_name = 'insights-sync-bench-load' and state = 'active'`,
      );
      samples.active += rows[0]?.active ?? 0;
      samples.locked += rows[0]?.locked ?? 0;
      samples.extending += rows[0]?.extending ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return samples;
  })();
  // Awaited once the load has ended well; a load that failed leaves it unobserved, and its own
  // error is the one to report.
  done.catch(() => {});
  const stop = () => {
    stopped = true;
  };
  return { stop, done };
}

/** Times `fn` on a pool of its own, then makes sure its backends' statistics are flushed. */
async function timed<T>(
  warehouse: BenchDatabase,
  max: number,
  fn: (pool: pg.Pool) => Promise<T>,
): Promise<{ ms: number; result: T }> {
  const pool = createPool({
    url: warehouse.url,
    schema: BENCH_SCHEMA,
    max,
    applicationName: 'insights-sync-bench-load',
  });
  try {
    const started = performance.now();
    const result = await fn(pool);
    const ms = performance.now() - started;
    return { ms, result };
  } finally {
    await pool.end();
    await statisticsFlushed(warehouse.pool);
  }
}

/**
 * pg_stat_user_tables is fed by each backend when it ends (and now and then while it runs): wait
 * until the phase's backends are gone, then read a fresh snapshot.
 */
async function statisticsFlushed(pool: pg.Pool): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await pool.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where application_name = 'insights-sync-bench-load'",
    );
    if ((rows[0]?.n ?? 0) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // The stats collector of PostgreSQL 15+ applies a backend's counts in its exit; a moment more.
  await new Promise((resolve) => setTimeout(resolve, 100));
}

interface TupleCounts {
  feedbackUpdated: number;
  visitorsUpdated: number;
  feedbackInserted: number;
}

async function tupleCounts(pool: pg.Pool): Promise<TupleCounts> {
  const client = await pool.connect();
  try {
    await client.query('select pg_stat_clear_snapshot()');
    const { rows } = await client.query<{ relname: string; ins: number; upd: number }>(
      `select relname, n_tup_ins::int as ins, n_tup_upd::int as upd from pg_stat_user_tables
       where schemaname = $1 and relname in ('feedback', 'visitors')`,
      [BENCH_SCHEMA],
    );
    const of = (name: string) => rows.find((r) => r.relname === name);
    return {
      feedbackUpdated: of('feedback')?.upd ?? 0,
      visitorsUpdated: of('visitors')?.upd ?? 0,
      feedbackInserted: of('feedback')?.ins ?? 0,
    };
  } finally {
    client.release();
  }
}

async function walPosition(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
  return rows[0]?.lsn ?? '0/0';
}

async function walSince(pool: pg.Pool, lsn: string): Promise<number> {
  const { rows } = await pool.query<{ bytes: string }>(
    'select pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::text as bytes',
    [lsn],
  );
  return Number(rows[0]?.bytes ?? Number.NaN);
}

/** A checkpoint before each timed phase: none of them pays for the previous one's dirty pages. */
async function checkpoint(pool: pg.Pool): Promise<void> {
  // Needs superuser (or pg_checkpoint); without it, the phases are just noisier.
  await pool.query('checkpoint').catch(() => {});
}

async function inFreshWarehouse<T>(
  server: BenchServer,
  fn: (warehouse: BenchDatabase) => Promise<T>,
): Promise<T> {
  const warehouse = await server.createDatabase();
  try {
    await inTransaction(warehouse.pool, (trx) => ensureSource(trx, SOURCE, BASE_URL));
    await checkpoint(warehouse.pool);
    return await fn(warehouse);
  } finally {
    await warehouse.drop();
  }
}

/**
 * COPY of every item's row into the empty feedback table: what the disk and server allow. One
 * stream (one backend), or `streams` at once, the windows dealt out in turn.
 */
async function copyReference(
  server: BenchServer,
  windows: readonly Window[],
  streams: number,
): Promise<number> {
  return inFreshWarehouse(server, async (warehouse) => {
    const { ms } = await timed(warehouse, streams, (pool) =>
      Promise.all(
        Array.from({ length: streams }, (_, stream) =>
          inTransaction(pool, (trx) =>
            trx.copyRows(
              'feedback',
              feedbackSpec.columns,
              (function* () {
                for (const [i, window] of windows.entries())
                  if (i % streams === stream)
                    for (const item of window.items) yield feedbackRow(SOURCE, item);
              })(),
            ),
          ),
        ),
      ),
    );
    return ms;
  });
}

export async function runLoad(server: BenchServer, options: LoadOptions): Promise<RunResult> {
  const windows = feedbackWindows(options.items);
  const changedWindows = withChanges(windows);
  const n = options.items;
  const changed = changedCount(n);
  const failures: string[] = [];
  const measures: Record<string, number> = { windows: windows.length };
  const rate = (ms: number) => (n * 1000) / ms;

  measures.copyRowsPerS = rate(await copyReference(server, windows, 1));
  measures.copy2RowsPerS = rate(await copyReference(server, windows, 2));

  await inFreshWarehouse(server, async (warehouse) => {
    const lsn = await walPosition(warehouse.pool);
    const first = await timed(warehouse, 1, (pool) => loadAll(pool, windows, 1));
    const firstWal = await walSince(warehouse.pool, lsn);
    measures.loaderRowsPerS = rate(first.ms);
    measures.firstWalMb = firstWal / 1e6;
    if (first.result.inserted !== n)
      failures.push(`load: first load inserted ${first.result.inserted} of ${n}`);
    const afterFirst = await tupleCounts(warehouse.pool);
    if (afterFirst.feedbackInserted !== n)
      failures.push(
        `load: pg_stat_user_tables counts ${afterFirst.feedbackInserted} feedback inserts, expected ${n}`,
      );

    await checkpoint(warehouse.pool);
    const noopLsn = await walPosition(warehouse.pool);
    const noop = await timed(warehouse, 1, (pool) => loadAll(pool, windows, 1));
    const noopWal = await walSince(warehouse.pool, noopLsn);
    const afterNoop = await tupleCounts(warehouse.pool);
    measures.noopRowsPerS = rate(noop.ms);
    measures.noopUpdated =
      afterNoop.feedbackUpdated -
      afterFirst.feedbackUpdated +
      afterNoop.visitorsUpdated -
      afterFirst.visitorsUpdated;
    measures.noopWalShare = percent(noopWal, firstWal);
    if (noop.result.unchanged !== n)
      failures.push(`load: no-op re-load left ${noop.result.unchanged} of ${n} unchanged`);

    await checkpoint(warehouse.pool);
    const edit = await timed(warehouse, 1, (pool) => loadAll(pool, changedWindows, 1));
    const afterEdit = await tupleCounts(warehouse.pool);
    measures.changedUpdated = afterEdit.feedbackUpdated - afterNoop.feedbackUpdated;
    measures.changedOthers = afterEdit.visitorsUpdated - afterNoop.visitorsUpdated;
    if (edit.result.updated !== changed)
      failures.push(`load: the loader reports ${edit.result.updated} updated rows, ${changed} changed`);
    const { rows } = await sql<{ edited: number }>`
      select count(*)::int as edited from feedback where comment like '% (edited)'`.execute(warehouse.db);
    if (rows[0]?.edited !== changed)
      failures.push(`load: ${rows[0]?.edited} edited rows stored, ${changed} sent`);
  });

  const parallel = await inFreshWarehouse(server, async (warehouse) => {
    const waits = sampleWaits(warehouse.pool);
    const { ms, result } = await timed(warehouse, 10, (pool) =>
      loadAll(pool, windows, options.parallelWindows),
    ).finally(() => waits.stop());
    if (result.inserted !== n) failures.push(`load: parallel load inserted ${result.inserted} of ${n}`);
    return { ms, waits: await waits.done };
  });
  measures.parallelRowsPerS = rate(parallel.ms);
  measures.lockWaitShare = percent(parallel.waits.locked, parallel.waits.active);
  measures.extendWaitShare = percent(parallel.waits.extending, parallel.waits.active);
  const twoMs = await inFreshWarehouse(server, async (warehouse) => {
    const { ms, result } = await timed(warehouse, 10, (pool) => loadAll(pool, windows, 2));
    if (result.inserted !== n) failures.push(`load: 2 windows in flight inserted ${result.inserted} of ${n}`);
    return ms;
  });
  measures.twoRowsPerS = rate(twoMs);

  if (options.naiveItems > 0) {
    const naiveWindows = firstWindowsHolding(windows, options.naiveItems);
    const naiveN = naiveWindows.reduce((sum, window) => sum + window.items.length, 0);
    for (const [key, loader] of [
      ['multiRow', loadMultiRow],
      ['rowByRow', loadRowByRow],
    ] as const) {
      const ms = await inFreshWarehouse(server, async (warehouse) => {
        const { ms } = await timed(warehouse, 1, (pool) => loader(pool, SOURCE, naiveWindows));
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from feedback`.execute(
          warehouse.db,
        );
        if (rows[0]?.n !== naiveN) failures.push(`load: ${key} stored ${rows[0]?.n} of ${naiveN} rows`);
        return ms;
      });
      measures[`${key}RowsPerS`] = (naiveN * 1000) / ms;
    }
  }
  for (const key of ['loader', 'parallel', 'two', 'multiRow', 'rowByRow']) {
    const rowsPerS = measures[`${key}RowsPerS`];
    if (rowsPerS !== undefined) measures[`${key}Share`] = percent(rowsPerS, measures.copyRowsPerS);
  }
  if (measures.parallelRowsPerS !== undefined && measures.copy2RowsPerS !== undefined)
    measures.parallelShare2 = percent(measures.parallelRowsPerS, measures.copy2RowsPerS);
  return { measures, failures };
}
