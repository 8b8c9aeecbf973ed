/**
 * The benchmarks (bench/, `npm run bench`) on tiny sizes, so that they cannot rot unnoticed: every
 * code path runs, and what each one checks is asserted (no delivery lost, exact counts, a no-op
 * re-load that updates nothing). Never a time: CI machines are shared and noisy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBusySite } from '../../bench/busy-site.js';
import { type BenchServer, openBenchServer } from '../../bench/database.js';
import { runExtraction } from '../../bench/extraction.js';
import { changedCount, runLoad } from '../../bench/load.js';
import type { Machine } from '../../bench/machine.js';
import { runMemory } from '../../bench/memory.js';
import { runQueue } from '../../bench/queue.js';
import { runReadingProofs } from '../../bench/reading-proofs.js';
import { renderDoc, renderText } from '../../bench/report.js';
import { renderSaved, type SavedRun, savedRunOf } from '../../bench/saved.js';
import { FULL, figuresOf, runSuite, SMOKE } from '../../bench/suite.js';
import { runTimeSlices } from '../../bench/time-slices.js';
import { runWebhooks } from '../../bench/webhooks.js';
import { databaseServerUrl } from '../helpers/database.js';

describe('benchmarks, smoke sizes', () => {
  let server: BenchServer;
  beforeAll(async () => {
    server = await openBenchServer({ adminUrl: databaseServerUrl() });
  });
  afterAll(() => server?.stop());

  it('extraction: every window of the backfill loaded, never more requests in flight than allowed', async () => {
    const { measures, failures } = await runExtraction(server, SMOKE.extraction);
    expect(failures).toEqual([]);
    expect(measures.windows).toBe(SMOKE.extraction.days * 3);
    expect(measures.maxInFlight).toBeLessThanOrEqual(SMOKE.extraction.concurrency);
    expect(measures.requests).toBeGreaterThanOrEqual(measures.windows ?? 0);
  }, 60_000);

  it('load: COPY, loader, no-op re-load writing nothing, exactly the changed rows updated, naive variants', async () => {
    const { measures, failures } = await runLoad(server, SMOKE.load);
    expect(failures).toEqual([]);
    expect(measures.noopUpdated).toBe(0);
    expect(measures.changedUpdated).toBe(changedCount(SMOKE.load.items));
    expect(measures.changedOthers).toBe(0);
    for (const key of [
      'copyRowsPerS',
      'loaderRowsPerS',
      'parallelRowsPerS',
      'twoRowsPerS',
      'multiRowRowsPerS',
      'rowByRowRowsPerS',
    ])
      expect(measures[key]).toBeGreaterThan(0);
    // Shares of the statements the sampler saw running: some were seen, and those waiting to
    // extend a relation are among those waiting for a lock.
    expect(measures.lockWaitShare).toBeGreaterThanOrEqual(0);
    expect(measures.lockWaitShare).toBeLessThanOrEqual(100);
    expect(measures.extendWaitShare).toBeGreaterThanOrEqual(0);
    expect(measures.extendWaitShare).toBeLessThanOrEqual(measures.lockWaitShare as number);
  }, 120_000);

  it('memory: the CLI backfills from the simulate command, every item stored, its peak memory read', async () => {
    const { measures, failures } = await runMemory(server, SMOKE.memory);
    expect(failures).toEqual([]);
    expect(measures.smallItems).toBeGreaterThanOrEqual(SMOKE.memory.small);
    expect(measures.largeItems).toBeGreaterThanOrEqual(SMOKE.memory.large);
    expect(measures.smallPeakMb).toBeGreaterThan(10);
    expect(measures.largePeakMb).toBeGreaterThan(10);
  }, 120_000);

  it('webhooks: the serve command under autocannon, redeliveries included: all 2xx, none lost', async () => {
    const { measures, failures } = await runWebhooks(server, SMOKE.webhooks);
    expect(failures).toEqual([]);
    expect(measures.deliveries).toBeGreaterThan(0);
    expect(measures.non2xx).toBe(0);
    expect(measures.lost).toBe(0);
    expect(measures.healthRate).toBeGreaterThan(0);
  }, 60_000);

  it('queue: worker processes take every window of a queued backfill, never more in flight per source than its slots', async () => {
    const { measures, failures } = await runQueue(server, SMOKE.queue);
    expect(failures).toEqual([]);
    expect(measures.windows).toBe(SMOKE.queue.sources * SMOKE.queue.days * 3);
    const latency = SMOKE.queue.latencies[0];
    for (const n of SMOKE.queue.workers) {
      expect(measures[`maxInFlight${n}at${latency}`]).toBeLessThanOrEqual(2);
      expect(measures[`jobMs${n}at${latency}`]).toBeGreaterThan(0);
      expect(measures[`requestsPerWindow${n}at${latency}`]).toBeGreaterThanOrEqual(1);
      expect(measures[`coresBusy${n}at${latency}`]).toBeGreaterThan(0);
    }
    // The statements the sampler saw the warehouse's backends in, by what they do: seen at all
    // (a sampler looking at another database sees none), and each share of what was seen.
    const sampled = SMOKE.queue.workers.map((n) => measures[`pgSampled${n}at${latency}`] ?? 0);
    expect(sampled.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0);
    for (const [i, n] of SMOKE.queue.workers.entries()) {
      if (sampled[i] === 0) continue;
      const store = measures[`pgStoreShare${n}at${latency}`] as number;
      const queue = measures[`pgQueueShare${n}at${latency}`] as number;
      expect(store).toBeGreaterThanOrEqual(0);
      expect(queue).toBeGreaterThanOrEqual(0);
      expect(store + queue).toBeLessThanOrEqual(100);
      for (const wait of ['pgFlushShare', 'pgLockShare']) {
        expect(measures[`${wait}${n}at${latency}`]).toBeGreaterThanOrEqual(0);
        expect(measures[`${wait}${n}at${latency}`]).toBeLessThanOrEqual(100);
      }
    }
  }, 120_000);

  it("busy site: the full benchmark's week with default settings, every reachable item stored, exactly the days above the cap flagged", async () => {
    const { measures, failures } = await runBusySite(server, SMOKE.busySite);
    expect(failures).toEqual([]);
    // At least one window of the cap's size: the run met the sizes it exists to try.
    expect(measures.biggestDay).toBeGreaterThanOrEqual(SMOKE.busySite.cap);
    expect(measures.storedShare).toBe(100);
    expect(measures.peakMb).toBeGreaterThan(10);
  }, 300_000);

  it('time slices: behind a cap of 30, instants honoured store every item, ignored or refused flag the days above the cap at one probe a resource', async () => {
    const { measures, failures } = await runTimeSlices(server, SMOKE.timeSlices);
    expect(failures).toEqual([]);
    // Days above the cap: the run met the slices it exists to try.
    expect(measures.daysAboveCap).toBeGreaterThan(0);
    expect(measures.honouredStored).toBe(measures.expected);
    expect(measures.honouredTruncated).toBe(0);
    expect(measures.honouredInstantRequests).toBeGreaterThan(0);
    expect(measures.requestsOverIdeal).toBeGreaterThanOrEqual(1);
    for (const reading of ['ignored', 'refused']) {
      // Every day above the cap, and the whole days a capped server leaves in doubt.
      expect(measures[`${reading}Truncated`], reading).toBe(
        (measures.daysAboveCap ?? 0) + (measures[`${reading}FalseAlarms`] ?? 0),
      );
      expect(measures[`${reading}InstantRequests`], reading).toBeLessThanOrEqual(3);
    }
  }, 60_000);

  it('reading proofs: steady quiet, normal and busy sources settle no day short, at a proof request or more a run where days settle unsliced; a deploy reopens days', async () => {
    const { measures, failures } = await runReadingProofs(SMOKE.readingProofs);
    for (const source of ['quiet', 'normal', 'busy']) {
      expect(measures[`${source}SteadyShort`], source).toBe(0);
      for (const run of ['Backfill', 'Nightly']) {
        expect(measures[`${source}${run}PerDay`], `${source} ${run}`).toBeGreaterThanOrEqual(
          measures[`${source}${run}IdealPerDay`] ?? Number.NaN,
        );
        expect(measures[`${source}${run}EmptyExtra`], `${source} ${run}`).toBeGreaterThanOrEqual(0);
      }
    }
    for (const source of ['quiet', 'normal'])
      expect(measures[`${source}BackfillProofs`], source).toBeGreaterThan(0);
    // A busy source has no day small enough for a canary: its empty answers are checked one by one.
    for (const source of ['quiet', 'normal', 'busy'])
      expect(measures[`${source}DeployShort`], source).toBe(0);
    // Empty days exist on the quiet source, none on the others: the figure measures what it says.
    expect(measures.quietEmptyDays).toBeGreaterThan(0);
    expect(measures.normalBackfillEmptyExtra).toBe(0);
    expect(measures.normalDeployReopened).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  });

  it('the runner summarises runs and writes the table and the document', async () => {
    const result = await runSuite(server, SMOKE, { only: ['extraction'], runs: 2 });
    expect(result.failures).toEqual([]);
    const ratio = result.figures.find((f) => f.spec.key === 'learnedWallOverIdeal');
    expect(ratio?.summary.runs).toBe(2);
    expect(ratio?.met).toBeTypeOf('boolean');
    expect(renderText(result)).toContain('wall time / ideal, once learned');
    const machine: Machine = {
      cores: 2,
      cpu: 'test',
      memoryGb: 1,
      node: process.version,
      postgres: server.version,
      postgresSettings: '',
      databaseKind: 'given',
    };
    const run = {
      machine,
      date: new Date(),
      command: 'npm run bench',
      startLoad: 0,
      runs: 2,
      only: ['extraction' as const],
    };
    const doc = renderDoc({ ...run, result });
    expect(doc).toMatch(/^# Benchmarks/);
    expect(doc).toContain('| wall time / ideal, once learned |');
    // What npm run bench keeps beside the document renders it again, byte for byte.
    const saved = savedRunOf({ ...run, result });
    const kept = JSON.parse(JSON.stringify(saved)) as SavedRun;
    // The document is rendered at the full sizes' figures (npm run bench writes it for those only).
    const full = { ...result, figures: figuresOf(FULL, ['extraction'], result.values) };
    expect(renderSaved(kept)).toBe(renderDoc({ ...kept, result: full, date: new Date(kept.date) }));
  }, 60_000);
});
