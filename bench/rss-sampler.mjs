// Loaded with `node --import` into a profiled process (bench/memory-profile.ts): every 10 ms it
// reads what the process holds, and when the process exits it writes the sample of the largest
// resident set, with what made it up, as <BENCH_RSS_DIR>/<pid>.json. Plain JavaScript and Node's
// own modules only: it runs before anything else of the process, the installed command's included.
// It sees the process between tasks only: a peak inside one (a large answer parsed) is between
// two samples, so its resident set stays below the kernel's high-water mark (VmHWM), also written.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

const dir = process.env.BENCH_RSS_DIR;
const EVERY_MS = 10;

/** A /proc/self/status field, in kB. */
function statusKb(status, field) {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return match === null ? 0 : Number(match[1]);
}

if (dir !== undefined && dir !== '') {
  const startedMs = performance.now();
  let highest;
  const sample = () => {
    const status = readFileSync('/proc/self/status', 'utf8');
    const rssKb = statusKb(status, 'VmRSS');
    if (highest !== undefined && rssKb <= highest.rssKb) return;
    const memory = process.memoryUsage();
    highest = {
      rssKb,
      rssFileKb: statusKb(status, 'RssFile'),
      rssAnonKb: statusKb(status, 'RssAnon'),
      rssShmemKb: statusKb(status, 'RssShmem'),
      heapResidentBytes: getHeapSpaceStatistics().reduce((sum, space) => sum + space.physical_space_size, 0),
      externalBytes: memory.external,
      atMs: performance.now() - startedMs,
    };
  };
  const timer = setInterval(sample, EVERY_MS);
  timer.unref();
  process.on('exit', () => {
    sample();
    const status = readFileSync('/proc/self/status', 'utf8');
    const record = {
      ...highest,
      hwmKb: statusKb(status, 'VmHWM'),
      ranMs: performance.now() - startedMs,
      // What V8 allocated with malloc at most at once, outside its heap: its compiler's zones.
      mallocedPeakBytes: getHeapStatistics().peak_malloced_memory,
    };
    writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify(record));
  });
}
