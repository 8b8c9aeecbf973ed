import type { Command } from 'commander';
import { addRunOptions, type RunCommandOptions, runFromCommandLine } from './run-options.js';

export function registerSync(program: Command): void {
  addRunOptions(
    program
      .command('sync')
      .description(
        'Bring the warehouse up to date: every day not yet done since the watermark (plus a lookback for late items), through today UTC, and a snapshot of tests, results and heatmaps.',
      ),
  ).action((options: RunCommandOptions) => runFromCommandLine(options, { trigger: 'sync' }));
}
