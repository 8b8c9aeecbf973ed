import type { ConfigProblem } from '../errors.js';
import type { Env } from './env-settings.js';
import { webhookSettings } from './network.js';
import { readPiiMode } from './pii-settings.js';
import {
  API_KEY_CHARACTERS,
  baseUrlExpected,
  isApiKeyValue,
  RESERVED_SOURCE_NAME,
  type SourceDraft,
} from './source-config.js';
import { readSourcesFile } from './sources-file.js';

/**
 * The configured sources: INSIGHTS_CONFIG's file when set, else the one source of INSIGHTS_API_URL
 * and INSIGHTS_API_KEY (of INSIGHTS_WEBHOOK_TOKEN alone for `serve`).
 */
export function readSources(
  env: Env,
  readFile: (path: string) => string,
  required: boolean,
  sourcesFor: 'api' | 'webhooks',
  problems: ConfigProblem[],
): SourceDraft[] {
  const file = env.INSIGHTS_CONFIG;
  if (file !== undefined && file !== '') {
    // The file replaces the single-source variables; one of these set as well would be ignored silently.
    for (const variable of ['INSIGHTS_WEBHOOK_TOKEN', 'INSIGHTS_WEBHOOK_ALLOWED_IPS', 'INSIGHTS_PII']) {
      if (env[variable])
        problems.push({
          variable,
          expected: 'unset when INSIGHTS_CONFIG is used (webhook_token_env / allowed_ips / pii in the file)',
        });
    }
    return readSourcesFile(file, env, readFile, sourcesFor, problems);
  }
  if (sourcesFor === 'webhooks') return readWebhookSource(env, problems);

  const baseUrl = env.INSIGHTS_API_URL;
  const apiKey = env.INSIGHTS_API_KEY;
  const pii = readPiiMode(env.INSIGHTS_PII, problems);
  if (!required && !baseUrl && !apiKey) return [];
  const name = env.INSIGHTS_SOURCE_NAME || 'default';
  if (!RESERVED_SOURCE_NAME.test(name)) {
    problems.push({ variable: 'INSIGHTS_SOURCE_NAME', expected: 'letters, digits, _ . - (at most 63)' });
  }
  if (!baseUrl) {
    problems.push({
      variable: 'INSIGHTS_API_URL',
      expected:
        'the base URL of the API, e.g. https://api.example.com (or INSIGHTS_CONFIG for several sources)',
      missing: true,
    });
  } else {
    const expected = baseUrlExpected(baseUrl);
    if (expected !== undefined) problems.push({ variable: 'INSIGHTS_API_URL', expected });
  }
  if (!apiKey)
    problems.push({ variable: 'INSIGHTS_API_KEY', expected: 'the API key of the source', missing: true });
  else if (!isApiKeyValue(apiKey))
    problems.push({ variable: 'INSIGHTS_API_KEY', expected: API_KEY_CHARACTERS });
  const webhook = webhookSettings(
    { variable: 'INSIGHTS_WEBHOOK_TOKEN', value: env.INSIGHTS_WEBHOOK_TOKEN },
    { variable: 'INSIGHTS_WEBHOOK_ALLOWED_IPS', value: env.INSIGHTS_WEBHOOK_ALLOWED_IPS },
    problems,
  );
  if (!baseUrl || !apiKey) return [];
  return [{ name, baseUrl: baseUrl.replace(/\/+$/, ''), apiKey, ...webhook, ...pii }];
}

/**
 * The single source of `serve` (sourcesFor `webhooks`): its name, webhook token, allow-list and
 * pii; the API settings are not its business (an unset or bad INSIGHTS_API_KEY does not stop it).
 */
function readWebhookSource(env: Env, problems: ConfigProblem[]): SourceDraft[] {
  const pii = readPiiMode(env.INSIGHTS_PII, problems);
  const name = env.INSIGHTS_SOURCE_NAME || 'default';
  if (!RESERVED_SOURCE_NAME.test(name)) {
    problems.push({ variable: 'INSIGHTS_SOURCE_NAME', expected: 'letters, digits, _ . - (at most 63)' });
  }
  const webhook = webhookSettings(
    { variable: 'INSIGHTS_WEBHOOK_TOKEN', value: env.INSIGHTS_WEBHOOK_TOKEN },
    { variable: 'INSIGHTS_WEBHOOK_ALLOWED_IPS', value: env.INSIGHTS_WEBHOOK_ALLOWED_IPS },
    problems,
  );
  if (webhook.webhookToken === undefined) return [];
  return [{ name, baseUrl: '', apiKey: '', ...webhook, ...pii }];
}
