import { readFileSync } from 'node:fs';
import type pg from 'pg';

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

export function cpuMsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
}

/** The server processes serving one database's connections (its backends), by pid. */
export async function backendPids(pool: pg.Pool): Promise<number[]> {
  const { rows } = await pool.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  return rows.map((r) => r.pid);
}
