import type pg from 'pg';

/**
 * How much a process writes at once, weighed in rows. Windows in flight are set by how many
 * requests the source may have open, not by what the database can write at once: eight windows of
 * a busy day (10,000 items each) storing together on a 2-core server loaded at about half the rate
 * two did (docs/benchmarks.md, the load section): their backends queued for the lock that extends
 * a table or an index by a page, one backend at a time per relation, and for the WAL's. Small
 * windows are not held up: they go on together as long as their rows fit.
 *
 * - A write is admitted while the rows being written, its own included, fit `capacity`; a write
 *   larger than it goes alone (it is never refused).
 * - In arrival order: a large write that waits is not overtaken by small ones that would fit,
 *   or a stream of them could hold it up for ever.
 */
export interface WriteGate {
  /** Runs `write` once `rows` fit beside the writes in progress; gives its result or error. */
  run<T>(rows: number, write: () => Promise<T>): Promise<T>;
  /** Rows being written and writes waiting: for tests. */
  stats(): { writing: number; rows: number; waiting: number };
}

export function createWriteGate(capacity: number): WriteGate {
  let writing = 0;
  let rows = 0;
  const waiting: { rows: number; go: () => void }[] = [];

  const fits = (n: number) => writing === 0 || rows + n <= capacity;
  const admitWaiting = () => {
    for (let next = waiting[0]; next !== undefined && fits(next.rows); next = waiting[0]) {
      waiting.shift();
      writing += 1;
      rows += next.rows;
      next.go();
    }
  };

  return {
    async run(n, write) {
      const weight = Math.max(0, n);
      if (waiting.length === 0 && fits(weight)) {
        writing += 1;
        rows += weight;
      } else {
        // Counted in by admitWaiting when its turn comes.
        await new Promise<void>((go) => waiting.push({ rows: weight, go }));
      }
      try {
        return await write();
      } finally {
        writing -= 1;
        rows -= weight;
        admitWaiting();
      }
    },
    stats: () => ({ writing, rows, waiting: waiting.length }),
  };
}

/**
 * Rows a process's window writes have in PostgreSQL at once: two windows of a busy day (10,000
 * items each), or many small ones. Two such windows in flight loaded at 81-97% of COPY's rate on a
 * 2-core server, one at a time at half of it (the next window's parameters are built while the
 * database writes), eight at 44-53% (`npm run bench -- --only load`).
 */
export const WINDOW_ROWS_AT_ONCE = 20_000;

const GATES = new WeakMap<pg.Pool, WriteGate>();

/**
 * The gate of every window write on `pool` (a window's store and its neighbours'): one per pool,
 * so a run's windows, a worker's lanes and the load benchmark share one without passing it along.
 */
export function windowWritesOf(pool: pg.Pool): WriteGate {
  let gate = GATES.get(pool);
  if (gate === undefined) {
    gate = createWriteGate(WINDOW_ROWS_AT_ONCE);
    GATES.set(pool, gate);
  }
  return gate;
}
