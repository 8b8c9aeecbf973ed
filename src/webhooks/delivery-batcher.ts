import type pg from 'pg';
import { classifyDatabaseError } from './database-errors.js';
import { type DeliveryOutcome, receiveDelivery, type WebhookSource } from './receive.js';
import { type IncomingDelivery, receiveDeliveries } from './receive-batch.js';

export interface DeliveryBatcherOptions {
  pool: pg.Pool;
  /** Most deliveries stored in one transaction. */
  maxBatch?: number;
  /** Most transactions at once; each holds one connection of the pool. */
  maxConcurrent?: number;
}

export interface DeliveryBatcher {
  /** Resolves once the delivery is stored and committed; throws when it could not be stored. */
  receive(source: WebhookSource, body: unknown): Promise<DeliveryOutcome>;
}

interface Pending extends IncomingDelivery {
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
 * Micro-batches deliveries: each one is still acknowledged only after the commit that stored it.
 * When PostgreSQL refuses a batch because of one body's value (a data error), each delivery of
 * the batch is received again on its own, so one bad delivery cannot fail the others.
 */
export function createDeliveryBatcher(options: DeliveryBatcherOptions): DeliveryBatcher {
  const { pool } = options;
  const maxBatch = options.maxBatch ?? DEFAULT_MAX_BATCH;
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  const queue: Pending[] = [];
  let running = 0;
  const ensuredSources = new Set<string>();
  let scheduled = false;

  const pump = () => {
    scheduled = false;
    while (running < maxConcurrent && queue.length > 0) {
      running += 1;
      void store(queue.splice(0, maxBatch)).finally(() => {
        running -= 1;
        pump();
      });
    }
  };

  async function store(batch: Pending[]): Promise<void> {
    try {
      const outcomes = await receiveDeliveries(pool, batch, ensuredSources);
      batch.forEach((pending, i) => {
        const outcome = outcomes[i];
        if (outcome === undefined) pending.reject(new Error('a delivery of the batch got no outcome'));
        else pending.resolve(outcome);
      });
    } catch (error) {
      if (classifyDatabaseError(error) !== 'data') {
        for (const pending of batch) pending.reject(error);
        return;
      }
      // Nothing of the batch was stored: each delivery alone, with the single path's handling of
      // a refused value (stored as rejected, 422). A source row gone meanwhile (a foreign key
      // refusal) is made sure of again from now on.
      ensuredSources.clear();
      await Promise.all(
        batch.map((pending) =>
          receiveDelivery(pool, pending.source, pending.body).then(pending.resolve, pending.reject),
        ),
      );
    }
  }

  return {
    receive(source, body) {
      return new Promise<DeliveryOutcome>((resolve, reject) => {
        queue.push({ source, body, resolve, reject });
        // The bodies parsed in this turn of the event loop join the same batch.
        if (!scheduled) {
          scheduled = true;
          setImmediate(pump);
        }
      });
    },
  };
}
