import { Registry } from 'prom-client';

/**
 * The process's one Prometheus registry: what `serve` and `schedule` expose on /metrics. Its own
 * instance, not prom-client's global default, so that no library's metrics join it unasked.
 * Every name starts with insights_sync_ and is in base units (seconds, bytes); counters end in
 * _total; labels are only source, resource, outcome and status, each with a bounded set of values.
 */
export const processRegistry = new Registry();

/** The exposition text of a registry (the process's by default). */
export function metricsText(registry: Registry = processRegistry): Promise<string> {
  return registry.metrics();
}

/** Content-Type of metricsText: Prometheus text format 0.0.4. */
export const METRICS_CONTENT_TYPE = processRegistry.contentType;
