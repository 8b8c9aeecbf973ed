import { type Config, loadConfig, SCHEDULE_SETTINGS, SERVE_SETTINGS } from '../config/config.js';
import { loadDotEnv } from '../config/dotenv.js';
import { describeUnknown, unknownVariables } from '../config/unknown-variables.js';
import { createLogger, type Logger, loggerOptions } from '../log/logger.js';
import { logProcessWarnings } from '../log/process-warnings.js';

export interface CommandContext {
  config: Readonly<Config>;
  logger: Logger;
}

export interface CommandContextOptions {
  requireSources: boolean;
  /** --embedded: without DATABASE_URL, use the embedded PostgreSQL (like INSIGHTS_EMBEDDED=1). */
  embedded?: boolean;
  /** Only `schedule` reads INSIGHTS_SCHEDULE and INSIGHTS_TIMEZONE (a bad one breaks no other command). */
  schedule?: boolean;
  /**
   * Only `serve` reads the webhook receiver's settings (SERVE_SETTINGS), and it alone needs of a
   * source no API URL or key (it never calls the API), only its name and webhook token.
   */
  serve?: boolean;
  /** `check`: every setting is read and checked, whichever command uses it. */
  all?: boolean;
  /**
   * False for a command that never hashes with INSIGHTS_PII_KEY: the key gets every check but the
   * look-up among well-known digests (LoadConfigOptions.lookUpPiiKeyDigests).
   */
  usesPiiKey?: boolean;
}

/**
 * .env of the working directory first (the environment wins over it), then the config (a bad
 * value fails before any connection or request), then the logger.
 */
export function commandContext(options: CommandContextOptions): CommandContext {
  const dotEnvWarning = loadDotEnv();
  const loaded = loadConfig({
    requireSources: options.requireSources,
    ignore: ignoredSettings(options),
    sourcesFor: options.serve === true ? 'webhooks' : 'api',
    lookUpPiiKeyDigests: options.all === true || options.usesPiiKey !== false,
  });
  const config = options.embedded === true ? Object.freeze({ ...loaded, embedded: true }) : loaded;
  const logger = createLogger(loggerOptions(config));
  logProcessWarnings(logger);
  if (dotEnvWarning !== undefined) logger.warn(dotEnvWarning);
  // A misspelt setting is otherwise ignored in silence, and its default stands.
  for (const unknown of unknownVariables(process.env)) logger.warn(describeUnknown(unknown));
  return { config, logger };
}

/** The settings a command does not use: neither read nor checked (a bad one breaks only its own command). */
function ignoredSettings(options: Pick<CommandContextOptions, 'schedule' | 'serve' | 'all'>) {
  if (options.all === true) return [];
  return [
    ...(options.schedule === true ? [] : SCHEDULE_SETTINGS),
    ...(options.serve === true ? [] : SERVE_SETTINGS),
  ];
}
