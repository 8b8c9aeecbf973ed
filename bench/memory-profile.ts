/**
 * Where a backfill's resident memory goes: the backfill of bench/memory.ts run once more with
 * bench/rss-sampler.mjs loaded into its processes (`node --import`, through NODE_OPTIONS, which
 * the launcher's child inherits). The sampler keeps the sample of each process's largest resident
 * set; of the process that runs the backfill (the largest), what made it up.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchServer } from './database.js';
import { measureBackfill } from './memory.js';

const SAMPLER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rss-sampler.mjs');

/** What bench/rss-sampler.mjs writes of a process: its largest sample, and the kernel's peak. */
export interface RssSample {
  rssKb: number;
  rssFileKb: number;
  rssAnonKb: number;
  rssShmemKb: number;
  /** V8's heap spaces' resident pages. */
  heapResidentBytes: number;
  /** Memory V8 does not hold but is told of: Buffers and ArrayBuffers (the answers' bytes). */
  externalBytes: number;
  /** When the sample was taken, from the sampler's start. */
  atMs: number;
  hwmKb: number;
  ranMs: number;
  mallocedPeakBytes: number;
}

/** The largest sample's resident set, in MB (10^6 bytes), by what made it up. */
export interface RssComposition {
  rssMb: number;
  /** Pages of mapped files: Node's binary, its libraries, the code read from disk. */
  filesMb: number;
  heapMb: number;
  externalMb: number;
  /** The rest of the anonymous pages: malloc's (V8's compiler and collector, libuv), stacks. */
  restMb: number;
  /** How far into the run the sample was taken, in percent of the process's life. */
  atPct: number;
  /** The kernel's peak (VmHWM), which a sample between two tasks may miss. */
  hwmMb: number;
  /** The most V8 allocated with malloc at once, outside its heap (its compiler's zones): of the rest. */
  v8MallocPeakMb: number;
}

const MB = 1e6;

export function composition(sample: RssSample): RssComposition {
  const anonBytes = (sample.rssAnonKb + sample.rssShmemKb) * 1024;
  return {
    rssMb: (sample.rssKb * 1024) / MB,
    filesMb: (sample.rssFileKb * 1024) / MB,
    heapMb: sample.heapResidentBytes / MB,
    externalMb: sample.externalBytes / MB,
    restMb: Math.max(0, anonBytes - sample.heapResidentBytes - sample.externalBytes) / MB,
    atPct: sample.ranMs > 0 ? (100 * sample.atMs) / sample.ranMs : 0,
    hwmMb: (sample.hwmKb * 1024) / MB,
    v8MallocPeakMb: sample.mallocedPeakBytes / MB,
  };
}

/** The samples of every process the sampler wrote in `dir`, the largest resident set first. */
export function readSamples(dir: string): RssSample[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .map((name) => JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as RssSample)
    .sort((a, b) => b.rssKb - a.rssKb);
}

/** NODE_OPTIONS and the sampler's folder for a profiled process. */
export function samplerEnv(dir: string): Record<string, string> {
  return { NODE_OPTIONS: `--import=${SAMPLER}`, BENCH_RSS_DIR: dir };
}

/** bench/memory.ts's backfill of about `items` items by `cli`, profiled. */
export async function profiledBackfill(
  server: BenchServer,
  items: number,
  cli: string[],
): Promise<{ composition: RssComposition | undefined; failures: string[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'insights-bench-rss-'));
  try {
    const measured = await measureBackfill(server, items, { cli, env: samplerEnv(dir) });
    const [largest] = readSamples(dir);
    const failures = measured.failures.map((failure) => `profiled ${failure}`);
    if (largest === undefined) failures.push('memory profile: the sampler wrote nothing');
    return { composition: largest === undefined ? undefined : composition(largest), failures };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
