import type { Command } from 'commander';
import { registerSimulate } from './simulate.js';

/** Every command of the CLI, one file each. */
export function registerCommands(program: Command): void {
  registerSimulate(program);
}
