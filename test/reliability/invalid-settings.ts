import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Every invalid value carries this: no message may ever contain it. */
export const CANARY = 'CANARY';

/**
 * One invalid value for every environment variable the configuration reads, and the name the
 * error must give. Each value holds CANARY, unless it cannot (a number too small).
 */
export const INVALID_SETTINGS: {
  variable: string;
  value: string;
  names?: string;
  extra?: Record<string, string>;
  /** The command that uses the setting (a command that does not, ignores it); default sync. */
  command?: string;
}[] = [
  { variable: 'DATABASE_URL', value: 'CANARY-mysql://user:secret@db/warehouse' },
  { variable: 'INSIGHTS_SCHEMA', value: 'CANARY-Schema' },
  { variable: 'INSIGHTS_EMBEDDED_PORT', value: 'CANARY-5432' },
  { variable: 'INSIGHTS_EMBEDDED', value: 'CANARY-yes' },
  { variable: 'INSIGHTS_API_URL', value: 'CANARY-not-a-url' },
  { variable: 'INSIGHTS_API_KEY', value: 'CANARY-key\nwith-a-line-break' },
  { variable: 'INSIGHTS_SOURCE_NAME', value: 'CANARY source name' },
  // The file exists, its content is wrong: the message names the path in the file, not the content.
  {
    variable: 'INSIGHTS_CONFIG',
    value: 'config-with-canary.json',
    names: 'INSIGHTS_CONFIG sources[0]',
    extra: { INSIGHTS_API_URL: '', INSIGHTS_API_KEY: '' },
  },
  { variable: 'INSIGHTS_CONCURRENCY', value: 'CANARY-4' },
  { variable: 'INSIGHTS_LOOKBACK_DAYS', value: 'CANARY-3' },
  { variable: 'INSIGHTS_START_DATE', value: 'CANARY-2026-02-30' },
  { variable: 'INSIGHTS_LIMIT', value: 'CANARY-1000' },
  // Valid alone, invalid with INSIGHTS_LIMIT above it.
  { variable: 'INSIGHTS_MAX_LIMIT', value: '5', extra: { INSIGHTS_LIMIT: '10' } },
  { variable: 'INSIGHTS_REQUEST_TIMEOUT_MS', value: 'CANARY-30000' },
  { variable: 'INSIGHTS_MAX_ATTEMPTS', value: 'CANARY-5' },
  { variable: 'INSIGHTS_RETRY_BASE_MS', value: 'CANARY-500' },
  { variable: 'INSIGHTS_RETRY_MAX_MS', value: 'CANARY-30000' },
  { variable: 'INSIGHTS_RETRY_AFTER_CAP_MS', value: 'CANARY-60000' },
  { variable: 'INSIGHTS_MAX_INVALID_SHARE', value: 'CANARY-0.05' },
  { variable: 'INSIGHTS_SCHEDULE', value: 'CANARY * * * *', command: 'schedule' },
  { variable: 'INSIGHTS_TIMEZONE', value: 'CANARY/Nowhere', command: 'schedule' },
  { variable: 'INSIGHTS_SHUTDOWN_GRACE_MS', value: 'CANARY-25000' },
  { variable: 'INSIGHTS_SOURCE_CONCURRENCY', value: 'CANARY-2' },
  { variable: 'INSIGHTS_SOURCE_RPS', value: 'CANARY-4' },
  { variable: 'INSIGHTS_WORKER_CONCURRENCY', value: 'CANARY-4', command: 'worker' },
  { variable: 'INSIGHTS_QUEUE_EXPIRE_SECONDS', value: 'CANARY-900' },
  { variable: 'INSIGHTS_QUEUE_MAINTENANCE_SECONDS', value: 'CANARY-60' },
  { variable: 'INSIGHTS_QUEUE_RETRY_LIMIT', value: 'CANARY-3' },
  { variable: 'INSIGHTS_SCHEDULE_QUEUE', value: 'CANARY-yes', command: 'schedule' },
  { variable: 'INSIGHTS_SCRUB_REQUESTS_PER_NIGHT', value: 'CANARY-200', command: 'schedule' },
  { variable: 'INSIGHTS_WEBHOOK_TOKEN', value: 'CANARY/too/short' },
  { variable: 'INSIGHTS_WEBHOOK_ALLOWED_IPS', value: 'CANARY-10.0.0.0/8' },
  { variable: 'INSIGHTS_WEBHOOK_PORT', value: 'CANARY-8080', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_HOST', value: 'CANARY host', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_BODY_LIMIT', value: 'CANARY-262144', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_MAX_QUEUED', value: 'CANARY-2000', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_MAX_QUEUED_BYTES', value: 'CANARY-33554432', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_ADDRESS', value: 'CANARY-256', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_MAX_CONNECTIONS_PER_SUBNET', value: 'CANARY-256', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_RATE_LIMIT', value: 'CANARY-600', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_RETENTION_DAYS', value: 'CANARY-30', command: 'serve' },
  { variable: 'INSIGHTS_TRUSTED_PROXY', value: 'CANARY-proxy', command: 'serve' },
  { variable: 'INSIGHTS_WEBHOOK_CONFIRM_DAYS', value: 'CANARY-2' },
  { variable: 'INSIGHTS_PII', value: 'CANARY-hash' },
  { variable: 'INSIGHTS_PII_KEY', value: 'CANARY-too-short', extra: { INSIGHTS_PII: 'hash' } },
  { variable: 'INSIGHTS_PII_EXTRA_KEYS', value: 'CANARY,,x' },
  { variable: 'INSIGHTS_METRICS_FILE', value: 'CANARY-metrics.txt' },
  { variable: 'INSIGHTS_METRICS_PORT', value: 'CANARY-9464' },
  { variable: 'INSIGHTS_METRICS_HOST', value: 'CANARY host' },
  // bin/launch.js sets no limit for a bad value, so that this refusal speaks.
  { variable: 'INSIGHTS_MAX_HEAP_MB', value: 'CANARY-128' },
  { variable: 'LOG_LEVEL', value: 'CANARY-verbose' },
  { variable: 'LOG_FORMAT', value: 'CANARY-yaml' },
];

/**
 * Variables for which no value is invalid, and why: checked when used, not when read.
 * INSIGHTS_DATA_DIR: any non-empty path (the embedded server reports a directory it cannot use).
 */
export const ANY_VALUE_IS_VALID = ['INSIGHTS_DATA_DIR'];

/** The INSIGHTS_CONFIG file of the INSIGHTS_CONFIG case: an unknown key whose value is a canary. */
export const CONFIG_FILE_WITH_CANARY = JSON.stringify({
  sources: [{ name: 'shop', base_url: 'https://api.example.test', api_key: 'k', colour: 'CANARY-in-file' }],
});

/**
 * Every environment variable src/config/ reads (as test/docs/readme.test.ts finds them;
 * unknown-variables.ts names others, to tell a typo from them).
 */
export function configVariables(): string[] {
  const dir = fileURLToPath(new URL('../../src/config/', import.meta.url));
  const source = readdirSync(dir)
    .filter((file) => file.endsWith('.ts') && file !== 'unknown-variables.ts')
    .map((file) => readFileSync(`${dir}${file}`, 'utf8'))
    .join('\n');
  return [...new Set(source.match(/\b(?:INSIGHTS_[A-Z_]+|DATABASE_URL|LOG_LEVEL|LOG_FORMAT)\b/g))].sort();
}
