import type { Command } from 'commander';
import { embeddedOption } from './run-options.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      "Receive the service's webhooks (feedback and survey answers, spec section 6) at POST /webhooks/<source>/<token> and write each into the warehouse before answering. GET /healthz and /readyz for probes. Runs until SIGINT/SIGTERM, then finishes the deliveries in flight.",
    )
    .addHelpText(
      'after',
      [
        '',
        'Settings (environment); serve never calls the API, so INSIGHTS_API_URL and INSIGHTS_API_KEY are not needed:',
        '  DATABASE_URL                   the warehouse',
        '  INSIGHTS_SOURCE_NAME           the source in the address (default: default; or INSIGHTS_CONFIG)',
        '  INSIGHTS_WEBHOOK_TOKEN         the token of the address (or webhook_token_env per source in INSIGHTS_CONFIG)',
        '  INSIGHTS_WEBHOOK_PORT / _HOST  where to listen (8080, 0.0.0.0)',
        '  INSIGHTS_WEBHOOK_BODY_LIMIT    largest body in bytes (262144)',
        '  INSIGHTS_WEBHOOK_MAX_QUEUED / _MAX_QUEUED_BYTES',
        '                                 deliveries / body bytes waiting for the database (2000 / 33554432); beyond: 503',
        '  INSIGHTS_WEBHOOK_ALLOWED_IPS   senders allowed (IPs or CIDRs; allowed_ips per source)',
        '  INSIGHTS_TRUSTED_PROXY         the proxy whose X-Forwarded-For names the sender',
      ].join('\n'),
    )
    .addOption(embeddedOption())
    .action(async (options: { embedded?: boolean }) => {
      // The settings first: a bad one is refused before the web server's modules are loaded.
      const { commandContext } = await import('./command-context.js');
      const context = commandContext({ requireSources: true, embedded: options.embedded, serve: true });
      const { runServe } = await import('./serve-run.js');
      await runServe(context);
    });
}
