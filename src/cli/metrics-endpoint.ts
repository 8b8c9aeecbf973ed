import type { Config } from '../config/config.js';
import { CliError } from '../errors.js';
import { printOut } from '../log/terminal-text.js';
import type { MetricsServer } from '../metrics/metrics-server.js';

/**
 * The /metrics endpoint of a long-running command (`serve`, `schedule`) when
 * INSIGHTS_METRICS_PORT asks for one, on its own address (loopback by default: the webhook port
 * faces the internet), its URL printed. prom-client is loaded only then: it costs half a second.
 */
export async function startConfiguredMetrics(
  config: Pick<Config, 'metricsPort' | 'metricsHost'>,
): Promise<MetricsServer | undefined> {
  if (config.metricsPort === undefined) return undefined;
  const { startMetricsServer } = await import('../metrics/metrics-server.js');
  const metrics = await startMetricsServer({ port: config.metricsPort, host: config.metricsHost }).catch(
    (error: unknown) => {
      throw new CliError(
        `cannot serve metrics on ${config.metricsHost ?? '127.0.0.1'}:${config.metricsPort} (${error instanceof Error ? error.message : String(error)}); check INSIGHTS_METRICS_PORT and INSIGHTS_METRICS_HOST`,
      );
    },
  );
  printOut(`metrics: GET ${metrics.url}\n`);
  return metrics;
}
