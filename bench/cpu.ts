import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time spent by processes, read from Linux's /proc (utime + stime): where a benchmark's
 * cores go, by process. NaN where /proc is not there (macOS): the figure is then left out.
 */
const TICK_MS = 10; // USER_HZ is 100 on every Linux the benchmarks run on.

export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return Number.NaN;
  }
}

/**
 * Every process's `file` in /proc (`stat`, `cmdline`), by pid; those that end meanwhile left out.
 * Empty where /proc is not there.
 */
function eachProcess(file: 'stat' | 'cmdline'): Map<number, string> {
  const found = new Map<number, string>();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      found.set(Number(entry), readFileSync(`/proc/${entry}/${file}`, 'utf8'));
    } catch {
      // Ended meanwhile.
    }
  }
  return found;
}

/**
 * `pid` and every process below it, by /proc: a command the launcher starts again as its child
 * (bin/launch.js, for a heap limit) does its work in that child. Only `pid` where /proc is not there.
 */
export function withDescendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const [child, stat] of eachProcess('stat')) {
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const found = [pid];
  for (let i = 0; i < found.length; i++) found.push(...(children.get(found[i] as number) ?? []));
  return found;
}

export function cpuMsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
}

/** The server processes serving `database`, by /proc: a backend's command line names its database. */
export function databaseBackends(database: string): number[] {
  return [...eachProcess('cmdline')]
    .filter(([, title]) => title.startsWith('postgres: ') && title.includes(` ${database} `))
    .map(([pid]) => pid);
}

/**
 * The CPU of `database`'s backends from now until stop(), those that end meanwhile included: a
 * query of the live ones at the end misses what the ended ones spent (a pool closes a connection
 * idle for 10 s; a worker opens another when it needs one). Sampled every `everyMs`, each
 * backend's CPU at its last sight kept: one closed for idleness spent nothing in its last second,
 * so next to nothing is lost between samples. What the sampling costs this process is returned
 * apart (`samplerMs`), for the caller to take off its own figure.
 */
export function sampleBackendCpu(
  database: string,
  everyMs = 1000,
): { stop(): { cpuMs: number; samplerMs: number; ended: number } } {
  let samplerUs = 0;
  let current: number[] = [];
  /** Each backend's CPU at its last sight. */
  const last = new Map<number, number>();
  const sample = () => {
    const started = process.cpuUsage();
    current = databaseBackends(database);
    for (const pid of current) {
      const cpu = processCpuMs(pid);
      if (!Number.isNaN(cpu)) last.set(pid, cpu);
    }
    const spent = process.cpuUsage(started);
    samplerUs += spent.user + spent.system;
  };
  sample();
  // Those there at the start count from here; those started meanwhile, from nothing.
  const first = new Map(last);
  // The caller's own figure starts after this first look.
  samplerUs = 0;
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const alive = new Set(current);
      let cpuMs = 0;
      for (const [pid, cpu] of last) cpuMs += cpu - (first.get(pid) ?? 0);
      const ended = [...last.keys()].filter((pid) => !alive.has(pid)).length;
      return { cpuMs, samplerMs: samplerUs / 1000, ended };
    },
  };
}
