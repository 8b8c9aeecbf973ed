import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricsText } from '../../src/metrics/registry.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { RunResult } from '../../src/sync/outcomes.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runAgainst } from '../helpers/sync-harness.js';
import { checkExposition, samples } from './check-exposition.js';

const NOW = new Date('2026-03-10T05:00:00.000Z');

/**
 * A real sync against the simulator with INSIGHTS_METRICS_FILE set: the textfile holds the run
 * summary's numbers, the requests the simulator received by status, and passes the exposition checks (check-exposition.ts).
 */
describe("the run's metrics in node_exporter's textfile", () => {
  let t: TestDatabase;
  let sim: Simulator;
  let dir: string;
  let file: string;
  let first: RunResult;
  let text: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    // Faults to retry (each answered 429, 500 or 503 first), feedback capped at 5 items a
    // response (truncated days), recordings forbidden (failed windows): every number is nonzero.
    sim = await startSimulator({
      seed: 21,
      from: '2026-03-01',
      to: '2026-03-09',
      faultRate: 0.15,
      faults: ['429', '500', '503'],
      caps: { feedback: 5 },
      forbidden: ['recordings'],
    });
    dir = await mkdtemp(path.join(tmpdir(), 'metrics-'));
    file = path.join(dir, 'insights_sync.prom');
    first = await runAgainst(t, sim, { now: NOW, settings: { metricsFile: file } });
    text = await readFile(file, 'utf8');
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const value = (name: string, labels: Record<string, string> = {}) => {
    const found = samples(text).filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
    if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
    return found[0]?.value;
  };

  it('passes the exposition checks: ours, and promtool check metrics where installed', async () => {
    const check = await checkExposition(text);
    expect(check, check.output).toEqual({ code: 0, output: '' });
  });

  it('holds the rows, windows and truncated days of the run summary, per source and resource', () => {
    expect(first.status).toBe('partial');
    let resources = 0;
    for (const [source, bySource] of Object.entries(first.summary)) {
      for (const [resource, summary] of Object.entries(bySource)) {
        if (summary === undefined) continue;
        resources += 1;
        for (const outcome of ['inserted', 'updated', 'unchanged', 'rejected'] as const)
          expect(
            value('insights_sync_last_run_rows', { source, resource, outcome }),
            `${resource} ${outcome}`,
          ).toBe(summary[outcome]);
        expect(value('insights_sync_last_run_windows', { source, resource, outcome: 'failed' })).toBe(
          summary.failedWindows,
        );
        expect(value('insights_sync_last_run_windows', { source, resource, outcome: 'skipped' })).toBe(
          summary.skippedWindows,
        );
        expect(value('insights_sync_last_run_truncated_windows', { source, resource })).toBe(
          summary.truncatedDays.length,
        );
      }
    }
    expect(resources).toBe(6);
    const feedback = first.summary.main?.feedback;
    expect(feedback?.inserted).toBeGreaterThan(0);
    expect(feedback?.truncatedDays.length).toBeGreaterThan(0);
    expect(first.summary.main?.recordings?.failedWindows).toBeGreaterThan(0);
    const loaded = first.windows.filter((w) => w.resource === 'feedback' && w.status !== 'failed').length;
    expect(
      value('insights_sync_last_run_windows', { source: 'main', resource: 'feedback', outcome: 'loaded' }),
    ).toBe(loaded);
  });

  it('counts every request the simulator received, by status, retries included', () => {
    const requests = samples(text).filter((s) => s.name === 'insights_sync_last_run_requests');
    const byStatus = Object.fromEntries(requests.map((s) => [s.labels.status, s.value]));
    const stats = sim.stats();
    expect(requests.reduce((sum, s) => sum + s.value, 0)).toBe(stats.requests);
    expect((byStatus['429'] ?? 0) + (byStatus['500'] ?? 0) + (byStatus['503'] ?? 0)).toBe(stats.faultsServed);
    expect(stats.faultsServed).toBeGreaterThan(0);
    expect(byStatus['403']).toBeGreaterThan(0);
    expect(byStatus['200']).toBeGreaterThan(0);
    expect(first.requests.main).toEqual(byStatus);
  });

  it('holds the status, duration and end of the run; no run has succeeded yet', () => {
    expect(value('insights_sync_last_run_status', { status: 'partial' })).toBe(1);
    expect(value('insights_sync_last_run_status', { status: 'ok' })).toBe(0);
    expect(value('insights_sync_last_run_duration_seconds')).toBe(first.durationMs / 1000);
    expect(value('insights_sync_last_run_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(value('insights_sync_last_success_timestamp_seconds')).toBe(0);
  });

  it('is replaced whole by the next run, atomically, and remembers the last success', async () => {
    sim.resetStats();
    const second = await runAgainst(t, sim, {
      now: NOW,
      // With a port, the process registry (what schedule serves) gets the run too.
      settings: { metricsFile: file, metricsPort: 9464 },
      request: { resources: ['feedback', 'abtesting'] },
    });
    expect(second.status).toBe('ok');
    text = await readFile(file, 'utf8');
    expect((await checkExposition(text)).code).toBe(0);
    const finished = await t.db
      .selectFrom('sync_runs')
      .select('finished_at')
      .where('run_id', '=', second.runId)
      .executeTakeFirstOrThrow();
    expect(value('insights_sync_last_success_timestamp_seconds')).toBe(
      (finished.finished_at as Date).getTime() / 1000,
    );
    expect(value('insights_sync_last_run_status', { status: 'ok' })).toBe(1);
    // Only what this run did: no recordings any more.
    expect(samples(text).some((s) => s.labels.resource === 'recordings')).toBe(false);
    expect(
      value('insights_sync_last_run_rows', { source: 'main', resource: 'feedback', outcome: 'unchanged' }),
    ).toBe(second.summary.main?.feedback?.unchanged);
    // No temporary file left beside it; readable by node_exporter.
    expect(await readdir(dir)).toEqual(['insights_sync.prom']);
    expect((await stat(file)).mode & 0o444).toBe(0o444);
    // The process registry (what `schedule` serves) holds the same last run.
    const served = samples(await metricsText());
    expect(
      served.find((s) => s.name === 'insights_sync_last_run_status' && s.labels.status === 'ok')?.value,
    ).toBe(1);
  });

  it('a file that cannot be written does not fail the run', async () => {
    const run = await runAgainst(t, sim, {
      now: NOW,
      settings: { metricsFile: path.join(dir, 'no-such-directory', 'x.prom') },
      request: { resources: ['abtesting'] },
    });
    expect(run.status).toBe('ok');
  });
});
