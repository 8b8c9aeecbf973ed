import { type Config, loadConfig } from '../config/config.js';
import { createLogger, type Logger } from '../log/logger.js';

export interface CommandContext {
  config: Readonly<Config>;
  logger: Logger;
}

/** Config first (a bad value fails before any connection or request), then the logger. */
export function commandContext(options: { requireSources: boolean }): CommandContext {
  const config = loadConfig({ requireSources: options.requireSources });
  return { config, logger: createLogger({ level: config.logLevel }) };
}
