import type { AddressInfo } from 'node:net';
import { CliError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { printOut } from '../log/terminal-text.js';
import { RECEIVER_TIMEOUTS } from '../webhooks/receiver-timeouts.js';
import { createWebhookServer, type WebhookServer } from '../webhooks/server.js';
import type { CommandContext } from './command-context.js';
import { startConfiguredMetrics } from './metrics-endpoint.js';
import { usingWarehouse } from './warehouse.js';

/** The webhook receiver, until SIGINT/SIGTERM. */
export async function runServe({ config, logger }: CommandContext): Promise<void> {
  const receiving = config.sources.filter((source) => source.webhookToken !== undefined);
  if (receiving.length === 0) {
    throw new CliError(
      'no source has a webhook token: set INSIGHTS_WEBHOOK_TOKEN (or webhook_token_env for a source in INSIGHTS_CONFIG)',
    );
  }
  await usingWarehouse(
    config,
    logger,
    async ({ pool }) => {
      const app = createWebhookServer({
        pool,
        logger,
        sources: config.sources,
        bodyLimit: config.webhookBodyLimit,
        trustedProxy: config.trustedProxy,
        batching: { maxQueued: config.webhookMaxQueued, maxQueuedBytes: config.webhookMaxQueuedBytes },
        rateLimitPerMinute: config.webhookRateLimit,
        retentionDays: config.webhookRetentionDays,
        maxConnectionsPerAddress: config.webhookMaxConnectionsPerAddress,
        maxConnectionsPerSubnet: config.webhookMaxConnectionsPerSubnet,
      });
      await app.listen({ port: config.webhookPort, host: config.webhookHost }).catch((error: unknown) => {
        throw new CliError(
          `cannot listen on ${config.webhookHost}:${config.webhookPort} (${String(error)}); check INSIGHTS_WEBHOOK_PORT and INSIGHTS_WEBHOOK_HOST`,
        );
      });
      const { port } = app.server.address() as AddressInfo;
      const base = `http://${displayHost(config.webhookHost)}:${port}`;
      printOut(`webhook receiver listening on ${base}\n`);
      for (const source of receiving) printOut(`  POST ${base}/webhooks/${source.name}/<token>\n`);
      const metrics = await startConfiguredMetrics(config);
      try {
        await stopOnSignal(app, logger, config.shutdownGraceMs);
      } finally {
        await metrics?.close();
      }
      printOut('webhook receiver stopped\n');
    },
    RECEIVER_TIMEOUTS,
  );
}

/**
 * Waits for SIGINT/SIGTERM, then stops accepting connections and lets the requests in flight
 * finish (each answers only after its commit). After the grace period, or on a second signal,
 * the connections still open are cut: their senders get no 2xx and deliver again.
 */
async function stopOnSignal(app: WebhookServer, logger: Logger, graceMs: number): Promise<void> {
  let forced = false;
  const force = (reason: string) => {
    if (forced) return;
    forced = true;
    logger.error({ reason }, 'closing the connections still open; their deliveries are not acknowledged');
    app.server.closeAllConnections();
  };
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    const first = (received: NodeJS.Signals) => {
      process.off('SIGINT', first);
      process.off('SIGTERM', first);
      resolve(received);
    };
    process.on('SIGINT', first);
    process.on('SIGTERM', first);
  });
  const second = (again: NodeJS.Signals) => force(`a second ${again}`);
  process.on('SIGINT', second);
  process.on('SIGTERM', second);
  logger.warn({ signal, graceMs }, 'stopping: no new connections; deliveries in flight finish');
  const timer = setTimeout(() => force(`the shutdown grace period of ${graceMs} ms ran out`), graceMs);
  try {
    await app.close();
  } finally {
    clearTimeout(timer);
    process.off('SIGINT', second);
    process.off('SIGTERM', second);
  }
}

/** The address a client dials: a wildcard listen address is reached through loopback. */
function displayHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}
