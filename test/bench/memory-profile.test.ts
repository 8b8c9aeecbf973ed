import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { composition, readSamples, samplerEnv } from '../../bench/memory-profile.js';

const MB = 1e6;

describe("a profiled process's resident set, by what made it up", () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'insights-test-rss-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the sampler, loaded into a process, finds what it held at its largest: here 64 MB of Buffers', () => {
    // Holds 64 MB of touched Buffers for half a second (the sampler reads every 10 ms), then lets go.
    const script = `
      const held = Array.from({ length: 64 }, () => Buffer.alloc(1e6, 1));
      setTimeout(() => { held.length = 0; }, 500);`;
    const child = spawnSync(process.execPath, ['-e', script], {
      env: { ...process.env, ...samplerEnv(dir) },
      encoding: 'utf8',
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    const samples = readSamples(dir);
    expect(samples).toHaveLength(1);
    const [sample] = samples;
    if (sample === undefined) throw new Error('no sample');
    const parts = composition(sample);
    expect(parts.externalMb).toBeGreaterThanOrEqual(64);
    // What made it up adds up to the resident set (shared memory counted with the anonymous).
    expect(parts.filesMb + parts.heapMb + parts.externalMb + parts.restMb).toBeGreaterThanOrEqual(
      parts.rssMb - 1,
    );
    expect(parts.rssMb).toBeGreaterThanOrEqual(64 + parts.filesMb);
    expect(parts.hwmMb).toBeGreaterThanOrEqual(parts.rssMb);
    expect(parts.atPct).toBeGreaterThan(0);
    expect(parts.atPct).toBeLessThanOrEqual(100);
    expect(parts.v8MallocPeakMb).toBeGreaterThan(0);
  });

  it('the anonymous pages beyond the heap and the external memory are the rest', () => {
    const parts = composition({
      rssKb: 200_000,
      rssFileKb: 50_000,
      rssAnonKb: 149_000,
      rssShmemKb: 1000,
      heapResidentBytes: 60 * MB,
      externalBytes: 30 * MB,
      atMs: 900,
      hwmKb: 210_000,
      ranMs: 1000,
      mallocedPeakBytes: 20 * MB,
    });
    expect(parts.rssMb).toBeCloseTo(204.8, 1);
    expect(parts.filesMb).toBeCloseTo(51.2, 1);
    expect(parts.restMb).toBeCloseTo(150 * 1.024 - 90, 1);
    expect(parts.atPct).toBe(90);
    expect(parts.hwmMb).toBeCloseTo(215.04, 1);
    expect(parts.v8MallocPeakMb).toBe(20);
  });
});
