import type { Command } from 'commander';
import { registerBackfill } from './backfill.js';
import { registerCheck } from './check.js';
import { registerDbtSources } from './dbt-sources.js';
import { registerDemo } from './demo.js';
import { registerForget } from './forget.js';
import { registerMigrate } from './migrate.js';
import { registerReport } from './report.js';
import { registerSchedule } from './schedule.js';
import { registerServe } from './serve.js';
import { registerSimulate } from './simulate.js';
import { registerStatus } from './status.js';
import { registerSync } from './sync.js';
import { registerUnforget } from './unforget.js';
import { registerVerify } from './verify.js';
import { registerWebhooks } from './webhooks.js';
import { registerWorker } from './worker.js';

/** Every command of the CLI, one file each. */
export function registerCommands(program: Command): void {
  registerMigrate(program);
  registerSync(program);
  registerBackfill(program);
  registerVerify(program);
  registerStatus(program);
  registerCheck(program);
  registerReport(program);
  registerDbtSources(program);
  registerSchedule(program);
  registerWorker(program);
  registerServe(program);
  registerWebhooks(program);
  registerForget(program);
  registerUnforget(program);
  registerSimulate(program);
  registerDemo(program);
}
