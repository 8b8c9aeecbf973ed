import type pg from 'pg';
import { classifyDatabaseError } from '../db/transaction.js';
import { recordBatch, recordDatabaseError } from '../metrics/receiver-metrics.js';
import { prepareDelivery, type WebhookSource } from './prepare-delivery.js';
import { receiveDelivery } from './receive.js';
import { type DeliveryOutcome, type IncomingDelivery, receiveDeliveries } from './receive-batch.js';

export interface DeliveryBatcherOptions {
  pool: pg.Pool;
  /** Most deliveries stored in one transaction. */
  maxBatch?: number;
  /** Most transactions at once; each holds one connection of the pool. */
  maxConcurrent?: number;
  /**
   * Fewest deliveries waiting for which a transaction starts while another is running; with
   * none running, one delivery is enough.
   */
  minConcurrentBatch?: number;
  /** Most deliveries held (waiting or in a transaction); beyond it a delivery is refused at once. */
  maxQueued?: number;
  /** Most bytes of bodies (as received) held; beyond it a delivery is refused at once. */
  maxQueuedBytes?: number;
  /**
   * Longest a delivery waits for its commit before receive() rejects with DeliveryAbandonedError
   * (the sender is answered 503). One still waiting is taken out of the queue and never stored;
   * one already in a transaction may still commit (a later redelivery is then a duplicate, same
   * answer). Unset: no limit.
   */
  persistTimeoutMs?: number;
}

export interface ReceiveOptions {
  /** Size of the body as received, counted against maxQueuedBytes. */
  bytes?: number;
}

export interface DeliveryBatcher {
  /**
   * Resolves once the delivery is stored and committed; throws when it could not be stored,
   * QueueFullError at once when the batcher already holds its maximum, and at once, alone, when
   * the body cannot be checked or keyed (its batch goes without it).
   */
  receive(source: WebhookSource, body: unknown, options?: ReceiveOptions): Promise<DeliveryOutcome>;
  /** What is held now: for tests and the queue-full log line. */
  stats(): BatcherStats;
}

export interface BatcherStats {
  /** Deliveries waiting for a transaction. */
  waiting: number;
  /** Deliveries waiting or in a transaction that has not ended. */
  held: number;
  heldBytes: number;
}

/** The batcher holds its maximum: answered 503 at once, nothing queued. */
export class QueueFullError extends Error {
  constructor() {
    super('too many deliveries are waiting for the database');
    this.name = 'QueueFullError';
  }
}

/** The sender stopped waiting before its delivery got a transaction: it was never stored. */
export class DeliveryAbandonedError extends Error {
  constructor() {
    super('the delivery was not stored in time and was dropped from the queue');
    this.name = 'DeliveryAbandonedError';
  }
}

interface Pending extends IncomingDelivery {
  bytes: number;
  /** performance.now() past which the delivery is answered without waiting any longer. */
  deadline: number;
  /** Resolved or rejected: its promise no longer waits (it may still be held in a transaction). */
  settled: boolean;
  resolve(outcome: DeliveryOutcome): void;
  reject(error: unknown): void;
}

/**
 * A transaction per delivery costs a commit (a WAL flush) and six round trips: 365 deliveries/s
 * on a busy 2-core machine (docs/benchmarks.md). Deliveries that arrive while `maxConcurrent`
 * transactions are busy are therefore stored together, in one transaction of a handful of
 * set-based statements, when the next one ends. No timer: a lone delivery goes at once, and
 * batches grow only with the load. 200 deliveries of 1-2 kB make a transaction of a few hundred
 * kB, still a few milliseconds.
 */
const DEFAULT_MAX_BATCH = 200;
/** Two transactions pipeline (one commits while the next runs); more only split the batches. */
const DEFAULT_MAX_CONCURRENT = 2;
/**
 * A transaction costs a few round trips and a commit whatever its size. Started as soon as the
 * other one was, the second transaction took whatever had arrived meanwhile: at 32 connections
 * the batches averaged 10 deliveries, and that fixed cost was most of PostgreSQL's CPU per
 * delivery (batches of 10 cost it about three times what batches of 100 did). Now a second
 * transaction waits for this many; fewer wait for the running one to end and go with the
 * next batch.
 */
const DEFAULT_MIN_CONCURRENT_BATCH = 16;

/**
 * How many waiting deliveries a new transaction takes now (0: none starts). A lone delivery goes
 * at once; beside a running transaction, only a batch worth its fixed cost.
 */
export function nextBatchSize(
  state: { running: number; waiting: number },
  limits: { maxBatch: number; maxConcurrent: number; minConcurrentBatch: number },
): number {
  const { running, waiting } = state;
  if (waiting === 0 || running >= limits.maxConcurrent) return 0;
  if (running > 0 && waiting < limits.minConcurrentBatch) return 0;
  return Math.min(waiting, limits.maxBatch);
}
/**
 * While PostgreSQL is slow, deliveries pile up here, and a redelivery by a sender that timed out
 * is one more: without a bound memory grew by 1.2 GB in 20 s. 2,000 deliveries are
 * 10 full batches, about 10 s of a busy receiver's traffic; 32 MiB of bodies take a few times
 * that once parsed, well under 200 MB.
 */
const DEFAULT_MAX_QUEUED = 2_000;
const DEFAULT_MAX_QUEUED_BYTES = 32 * 1024 * 1024;

/**
 * Micro-batches deliveries: each one is still acknowledged only after the commit that stored it.
 * When PostgreSQL refuses a batch because of one body's value (a data error), each delivery of
 * the batch is received again on its own, so one bad delivery cannot fail the others.
 */
export function createDeliveryBatcher(options: DeliveryBatcherOptions): DeliveryBatcher {
  const { pool } = options;
  const limits = {
    maxBatch: options.maxBatch ?? DEFAULT_MAX_BATCH,
    maxConcurrent: options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT,
    minConcurrentBatch: options.minConcurrentBatch ?? DEFAULT_MIN_CONCURRENT_BATCH,
  };
  const maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  const maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES;
  const persistTimeoutMs = options.persistTimeoutMs ?? Number.POSITIVE_INFINITY;
  const queue: Pending[] = [];
  let running = 0;
  let held = 0;
  let heldBytes = 0;
  const ensuredSources = new Set<string>();
  let scheduled = false;

  const pump = () => {
    scheduled = false;
    for (;;) {
      const size = nextBatchSize({ running, waiting: queue.length }, limits);
      if (size === 0) return;
      running += 1;
      const batch = queue.splice(0, size);
      void store(batch).finally(() => {
        running -= 1;
        // Held until the transaction ends, answered or not: its bodies are in memory until then.
        for (const pending of batch) release(pending);
        pump();
      });
    }
  };

  async function store(batch: Pending[]): Promise<void> {
    try {
      const outcomes = await receiveDeliveries(pool, batch, ensuredSources);
      recordBatch(batch.length);
      batch.forEach((pending, i) => {
        const outcome = outcomes[i];
        if (outcome === undefined) pending.reject(new Error('a delivery of the batch got no outcome'));
        else pending.resolve(outcome);
      });
    } catch (error) {
      const kind = classifyDatabaseError(error);
      recordDatabaseError(kind);
      if (kind !== 'data') {
        for (const pending of batch) pending.reject(error);
        return;
      }
      // Nothing of the batch was stored: each delivery alone, as a batch of one, with
      // receiveDelivery's handling of a refused value (stored as rejected, 422). A source row gone
      // meanwhile (a foreign key refusal) is made sure of again from now on.
      ensuredSources.clear();
      await Promise.all(
        batch.map((pending) =>
          receiveDelivery(pool, pending.source, pending.body).then(pending.resolve, pending.reject),
        ),
      );
    }
  }

  const release = (pending: Pending) => {
    held -= 1;
    heldBytes -= pending.bytes;
  };

  const deadlines = watchDeadlines<Pending>((pending) => {
    // Still waiting: the oldest of the queue, as deadlines come in arrival order.
    const index = queue.indexOf(pending);
    if (index >= 0) {
      queue.splice(index, 1);
      release(pending);
    }
    // In a transaction already: the answer is 503 now; a late commit is harmless (dedupe).
    pending.reject(new DeliveryAbandonedError());
  });

  return {
    receive(source, body, { bytes = 0 } = {}) {
      // One delivery is always taken when nothing is held, whatever its size.
      if (held > 0 && (held + 1 > maxQueued || heldBytes + bytes > maxQueuedBytes))
        return Promise.reject(new QueueFullError());
      return new Promise<DeliveryOutcome>((resolve, reject) => {
        const settle =
          <T>(done: (value: T) => void) =>
          (value: T) => {
            if (pending.settled) return;
            pending.settled = true;
            done(value);
            deadlines.settled();
          };
        const pending: Pending = {
          source,
          body,
          // Checked and hashed now, while the running batch is in the database: the batch this
          // delivery joins is then sent without waiting for its bodies to be prepared.
          prepared: prepareDelivery(source, body),
          bytes,
          deadline: performance.now() + persistTimeoutMs,
          settled: false,
          resolve: settle(resolve),
          reject: settle(reject),
        };
        held += 1;
        heldBytes += bytes;
        queue.push(pending);
        deadlines.add(pending);
        // The bodies parsed in this turn of the event loop join the same batch.
        if (!scheduled) {
          scheduled = true;
          setImmediate(pump);
        }
      });
    },
    stats: () => ({ waiting: queue.length, held, heldBytes }),
  };
}

/**
 * The persist timeout of every delivery with ONE timer: a timer and an AbortSignal per delivery
 * (created, listened to, cleared) were a measurable share of the receiver's CPU at thousands of
 * deliveries a second. Every delivery gets the same timeout, so deadlines come in arrival order:
 * the timer is set for the oldest delivery not answered yet, and deliveries answered are dropped
 * from the front as they go.
 *
 * A delivery passed over is let go at once (its slot emptied), not when the array is next cut:
 * the slots before the head held up to 1,024 answered deliveries (their bodies, parsed and
 * checked), nearly a second of traffic at 32 connections. They outlived the young generation's
 * collections, were promoted, and the old generation was marked and compacted every 2 to 4 s,
 * with pauses of 20 to 45 ms that every delivery in flight waited out.
 */
export function watchDeadlines<T extends { deadline: number; settled: boolean }>(
  expire: (pending: T) => void,
): {
  add(pending: T): void;
  settled(): void;
  /** Deliveries the watch still references (for tests): none older than the oldest not answered. */
  held(): number;
} {
  let watched: (T | undefined)[] = [];
  let head = 0;
  let timer: NodeJS.Timeout | undefined;

  /** The oldest delivery still watched, its slot emptied: the array no longer holds it. */
  const pass = (): T => {
    const oldest = watched[head] as T;
    watched[head] = undefined;
    head += 1;
    return oldest;
  };
  const dropAnswered = () => {
    while (head < watched.length && (watched[head] as T).settled) pass();
    if (head === watched.length) {
      watched = [];
      head = 0;
    } else if (head > 1_024 && head * 2 > watched.length) {
      watched = watched.slice(head);
      head = 0;
    }
  };
  const arm = () => {
    const oldest = watched[head];
    if (timer !== undefined || oldest === undefined || oldest.deadline === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(fire, Math.max(0, oldest.deadline - performance.now()));
  };
  const fire = () => {
    timer = undefined;
    const now = performance.now();
    while (head < watched.length && (watched[head] as T).deadline <= now) {
      const oldest = pass();
      if (!oldest.settled) expire(oldest);
    }
    dropAnswered();
    arm();
  };
  return {
    add(pending) {
      watched.push(pending);
      arm();
    },
    settled() {
      dropAnswered();
      if (watched.length === 0 && timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
    },
    held: () => watched.reduce((count, pending) => count + (pending === undefined ? 0 : 1), 0),
  };
}
