import type { Command } from 'commander';
import { Option } from 'commander';
import { loadConfig } from '../config/config.js';
import { CliError } from '../errors.js';
import { addDays, todayUtc } from '../extract/days.js';
import { createLogger } from '../log/logger.js';
import { startSimulator } from '../simulator/server.js';
import { runSync } from '../sync/run-sync.js';
import { statusReport } from '../sync/status-report.js';
import { printRun } from './print-run.js';
import { renderStatus } from './status.js';
import { usingWarehouse } from './warehouse.js';

/**
 * The whole product on one machine with nothing installed: the simulator stands in for the
 * service, the embedded PostgreSQL for the warehouse (unless DATABASE_URL is set).
 */
export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(
      'Start the simulator, backfill the last N days into the warehouse (embedded PostgreSQL unless DATABASE_URL is set), run a sync, and print what was loaded. Safe to run again.',
    )
    .addOption(new Option('--days <n>', 'days to backfill').default('30'))
    .addOption(new Option('--seed <n>', 'simulator seed').default('1'))
    .action(async (options: { days: string; seed: string }) => {
      const days = Number(options.days);
      const seed = Number(options.seed);
      if (!Number.isInteger(days) || days < 1 || days > 3650)
        throw new CliError('--days: expected an integer 1-3650');
      if (!Number.isInteger(seed)) throw new CliError('--seed: expected an integer');
      const config = loadConfig({ requireSources: false });
      const logger = createLogger({ level: config.logLevel === 'info' ? 'warn' : config.logLevel });
      const today = todayUtc(new Date());
      const from = addDays(today, -days);
      const sim = await startSimulator({ seed, from, to: today });
      try {
        const sources = [{ name: 'demo', baseUrl: sim.url, apiKey: sim.apiKey }];
        await usingWarehouse(config, logger, async ({ pool, db, url, embedded }) => {
          const deps = {
            pool,
            db,
            logger,
            now: () => new Date(),
            sources,
            settings: { ...config, startDate: from },
          };
          process.stdout.write(`simulator at ${sim.url}; backfilling ${from} .. ${today}\n\n`);
          const backfill = await runSync(deps, { trigger: 'backfill', range: { from, to: today } });
          printRunQuietly(backfill);
          process.stdout.write('\nnightly sync (lookback and today only):\n');
          printRunQuietly(await runSync(deps, { trigger: 'sync' }));
          process.stdout.write(`\n${renderStatus(await statusReport(db, today))}`);
          process.stdout.write(
            embedded
              ? `\nThe warehouse is kept under ${config.dataDir}/ (embedded PostgreSQL, port ${config.embeddedPort}); it runs while a command runs.\nConnect during a run with: psql '${url}'  then: set search_path = ${config.schema};\n`
              : `\nConnect with: psql "$DATABASE_URL" and: set search_path = ${config.schema};\n`,
          );
        });
      } finally {
        await sim.stop();
      }
    });
}

/** The demo's busy day is truncated on purpose (the simulator caps it): that is shown, not fatal. */
function printRunQuietly(result: Parameters<typeof printRun>[0]): void {
  try {
    printRun(result);
  } catch (error) {
    process.stdout.write(`${error instanceof Error ? error.message : String(error)}\n`);
  }
}
