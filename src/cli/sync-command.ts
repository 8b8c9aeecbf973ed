import { runSync, type SyncRequest } from '../sync/run-sync.js';
import type { CommandContext } from './command-context.js';
import { printRun } from './print-run.js';
import { shutdownSignal } from './run-options.js';
import { usingWarehouse } from './warehouse.js';

/** Shared by `sync` and `backfill`: open the warehouse, run, print, decide the exit code. */
export async function executeRun({ config, logger }: CommandContext, request: SyncRequest): Promise<void> {
  const shutdown = shutdownSignal((signal) =>
    logger.warn({ signal }, 'stopping: no new windows; windows in flight finish'),
  );
  try {
    const result = await usingWarehouse(config, logger, ({ pool, db }) =>
      runSync(
        {
          pool,
          db,
          logger,
          now: () => new Date(),
          sources: config.sources,
          settings: config,
          signal: shutdown.signal,
        },
        request,
      ),
    );
    printRun(result);
  } finally {
    shutdown.dispose();
  }
}
