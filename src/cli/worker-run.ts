import { printOut } from '../log/terminal-text.js';
import { openQueue } from '../queue/window-queue.js';
import { shutdownSignal } from '../sync/shutdown.js';
import { runWorker } from '../sync/window-worker.js';
import type { CommandContext } from './command-context.js';
import { usingWarehouse } from './warehouse.js';

/** Opens the warehouse and the queue for the life of the process and takes window jobs until a signal. */
export async function runWorkerCommand(context: CommandContext): Promise<void> {
  const { config, logger } = context;
  const shutdown = shutdownSignal({ logger, graceMs: config.shutdownGraceMs });
  try {
    const result = await usingWarehouse(config, logger, async (warehouse) => {
      const boss = await openQueue(warehouse.url, config.schema, config, logger);
      try {
        printOut(
          `worker: taking window jobs of ${config.sources.map((s) => s.name).join(', ')} (${config.workerConcurrency} at once). Stop with Ctrl+C or SIGTERM.\n`,
        );
        return await runWorker({
          pool: warehouse.pool,
          db: warehouse.db,
          url: warehouse.url,
          schema: config.schema,
          boss,
          logger,
          sources: config.sources,
          settings: config,
          signal: shutdown.signal,
        });
      } finally {
        await boss.stop({ graceful: false, timeout: 1000 });
      }
    });
    printOut(`worker: stopped after ${result.done} window(s) done, ${result.failed} failed.\n`);
  } finally {
    shutdown.dispose();
  }
}
