import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { queueSchema } from '../../src/db/bookkeeping.js';
import type { Simulator } from '../../src/simulator/server.js';
import { type CliResult, cliEnv, startCli } from './cli.js';
import type { TestDatabase } from './database.js';

/** Source `s<i>`'s key on a simulator started with `apiKeys: sourceKeys(n)`. */
export function sourceKeys(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `key-s${i + 1}`);
}

export interface Cluster {
  env: Record<string, string>;
  sources: string[];
  workers: { child: ChildProcess; done: Promise<CliResult> }[];
  startWorker(extra?: Record<string, string>): { child: ChildProcess; done: Promise<CliResult> };
  /** SIGTERM to every worker still running; their results. */
  stop(): Promise<CliResult[]>;
}

/**
 * Several sources on one simulator (each its own key, so the simulator counts each source's
 * requests in flight apart), an INSIGHTS_CONFIG naming them, and `worker` processes of the dev
 * CLI against the test database.
 */
export function startCluster(
  t: TestDatabase,
  sim: Simulator,
  options: {
    sources: number;
    workers: number;
    env?: Record<string, string>;
    /** More keys of source `s<i+1>`'s entry in the sources file, e.g. its requests_per_second. */
    sourceFields?: Record<string, unknown>[];
    /** Source `s<i+1>`'s server, when the sources are not all on `sim` (one simulator per reading). */
    urls?: readonly string[];
  },
): Cluster {
  const dir = mkdtempSync(join(tmpdir(), 'queue-cluster-'));
  const keys = sourceKeys(options.sources);
  const sources = keys.map((_, i) => `s${i + 1}`);
  const file = join(dir, 'sources.json');
  writeFileSync(
    file,
    JSON.stringify({
      sources: sources.map((name, i) => ({
        name,
        base_url: options.urls?.[i] ?? sim.url,
        api_key: keys[i],
        ...options.sourceFields?.[i],
      })),
    }),
  );
  const env = cliEnv({
    DATABASE_URL: t.url,
    INSIGHTS_SCHEMA: t.schema,
    INSIGHTS_CONFIG: file,
    INSIGHTS_SOURCE_CONCURRENCY: '2',
    INSIGHTS_WORKER_CONCURRENCY: '4',
    // Long enough that a window slowed by a loaded machine is not taken for a dead worker's; the
    // trials that kill workers set a short expiry themselves.
    INSIGHTS_QUEUE_EXPIRE_SECONDS: '30',
    INSIGHTS_QUEUE_MAINTENANCE_SECONDS: '1',
    INSIGHTS_RETRY_BASE_MS: '0',
    INSIGHTS_RETRY_MAX_MS: '0',
    INSIGHTS_MAX_HEAP_MB: '0',
    ...options.env,
  });
  const workers: Cluster['workers'] = [];
  const startWorker = (extra: Record<string, string> = {}) => {
    const worker = startCli(['worker'], { ...env, ...extra });
    workers.push(worker);
    return worker;
  };
  for (let i = 0; i < options.workers; i++) startWorker();
  return {
    env,
    sources,
    workers,
    startWorker,
    async stop() {
      for (const w of workers)
        if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
      const results = await Promise.all(workers.map((w) => w.done));
      rmSync(dir, { recursive: true, force: true });
      return results;
    },
  };
}

/**
 * Window jobs by final state, the windows run twice (must be none): two jobs of one window
 * and run, the later queued before the earlier was done; and the most jobs one window had.
 */
export async function jobTally(t: TestDatabase) {
  const schema = queueSchema(t.schema);
  const states = await sql<{ state: string; count: number }>`
    select state::text, count(*)::int as count from ${sql.id(schema, 'job')} where name like 'windows.%' group by state`.execute(
    t.db,
  );
  // A window's jobs one after the other are the run reading a reopened day again (a later answer
  // showed it short, a proof failed): queued once the first was done. Two of them at once, or
  // queued before the other was done, are the window run twice.
  const twice = await sql<{ window: string; count: number }>`
    select "window", count(*)::int + 1 as count
      from (select data->>'source' || '/' || (data->>'resource') || '/' || (data->>'day') || '/' || (data->>'runId') as "window",
                   created_on,
                   lag(completed_on) over (
                     partition by data->>'source', data->>'resource', data->>'day', data->>'runId'
                     order by created_on) as previous_done
              from ${sql.id(schema, 'job')}
             where name like 'windows.%' and state = 'completed') jobs
     where created_on < previous_done
     group by 1`.execute(t.db);
  const most = await sql<{ most: number | null }>`
    select max(count)::int as most
      from (select count(*) as count from ${sql.id(schema, 'job')}
             where name like 'windows.%'
             group by data->>'source', data->>'resource', data->>'day', data->>'runId') windows`.execute(
    t.db,
  );
  return {
    byState: Object.fromEntries(states.rows.map((r) => [r.state, r.count])) as Record<string, number>,
    completedTwice: twice.rows,
    jobsOfBusiestWindow: most.rows[0]?.most ?? 0,
  };
}
