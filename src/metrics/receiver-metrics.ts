import { Counter, Histogram, type Registry } from 'prom-client';
import { processRegistry } from './registry.js';

/**
 * What became of a webhook request to /webhooks/<source>/<token>, from its answer. A bounded set:
 * the source in the URL is the sender's word, so it is not a label (any name would make a series).
 */
export const DELIVERY_OUTCOMES = [
  'applied', // 200: stored and merged
  'rejected', // 422: stored as rejected (invalid body)
  'not_found', // 404: no such source, one without a token, or a wrong token
  'forbidden', // 403: address not allowed
  'too_large', // 413
  'rate_limited', // 429: the source is over INSIGHTS_WEBHOOK_RATE_LIMIT
  'malformed', // 400, 415 and other 4xx: not JSON, malformed JSON, too deep
  'busy', // 503: the delivery queue was full
  'unavailable', // 503: the database could not store it
  'error', // 500 and other 5xx
] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** Why a delivery transaction failed (src/webhooks/database-errors.ts). */
export type DatabaseErrorKind = 'unavailable' | 'data' | 'bug';

/** The outcome of a delivery answered with `status`; queueFull tells the two kinds of 503 apart. */
export function deliveryOutcome(status: number, options: { queueFull?: boolean } = {}): DeliveryOutcome {
  if (status >= 200 && status < 300) return 'applied';
  switch (status) {
    case 422:
      return 'rejected';
    case 404:
      return 'not_found';
    case 403:
      return 'forbidden';
    case 413:
      return 'too_large';
    case 429:
      return 'rate_limited';
    case 503:
      return options.queueFull ? 'busy' : 'unavailable';
  }
  return status >= 400 && status < 500 ? 'malformed' : 'error';
}

/**
 * Answer times from a cache-warm insert (about a millisecond) to the persist timeout (10 s by
 * default), where the answer becomes 503.
 */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Deliveries per transaction: 1 when idle, up to the batcher's maximum of 200 under load. */
const BATCH_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200];

export interface ReceiverMetrics {
  /** One answered webhook request: its outcome and how long it took to answer, in seconds. */
  recordDelivery(outcome: DeliveryOutcome, seconds: number): void;
  /** One transaction of the delivery batcher, with the number of deliveries it stored. */
  recordBatch(deliveries: number): void;
  /** A delivery transaction that failed, by kind. */
  recordDatabaseError(kind: DatabaseErrorKind): void;
}

export function createReceiverMetrics(registry: Registry): ReceiverMetrics {
  const deliveries = new Counter({
    name: 'insights_sync_webhook_deliveries_total',
    help: 'Webhook requests answered, by outcome.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'insights_sync_webhook_delivery_duration_seconds',
    help: 'Time from a webhook request to its answer, by outcome.',
    labelNames: ['outcome'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const batches = new Histogram({
    name: 'insights_sync_webhook_batch_deliveries',
    help: 'Deliveries stored per database transaction of the receiver.',
    buckets: BATCH_BUCKETS,
    registers: [registry],
  });
  const databaseErrors = new Counter({
    name: 'insights_sync_webhook_database_errors_total',
    help: 'Delivery transactions that failed: unavailable (answered 503), data (stored as rejected one by one), bug (500).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  // Every outcome shows from the start (at 0), so a rate over it exists before the first one.
  for (const outcome of DELIVERY_OUTCOMES) deliveries.labels(outcome).inc(0);
  for (const kind of ['unavailable', 'data', 'bug'] as const) databaseErrors.labels(kind).inc(0);
  return {
    recordDelivery(outcome, seconds) {
      deliveries.labels(outcome).inc();
      if (Number.isFinite(seconds) && seconds >= 0) latency.labels(outcome).observe(seconds);
    },
    recordBatch(size) {
      batches.observe(size);
    },
    recordDatabaseError(kind) {
      databaseErrors.labels(kind).inc();
    },
  };
}

/** The receiver's metrics in the process registry: what `serve` calls and exposes. */
const receiver = createReceiverMetrics(processRegistry);
export const recordDelivery: ReceiverMetrics['recordDelivery'] = (outcome, seconds) =>
  receiver.recordDelivery(outcome, seconds);
export const recordBatch: ReceiverMetrics['recordBatch'] = (size) => receiver.recordBatch(size);
export const recordDatabaseError: ReceiverMetrics['recordDatabaseError'] = (kind) =>
  receiver.recordDatabaseError(kind);
