import * as z from 'zod';
import type { ConfigProblem } from '../errors.js';
import { PII_MODES } from '../schemas/pii.js';
import { type Env, rpsNumber } from './env-settings.js';
import { jsonErrorPlace } from './json-errors.js';
import { CIDR_LIST_EXPECTED, isCidr, WEBHOOK_TOKEN_EXPECTED, webhookSettings } from './network.js';
import {
  API_KEY_CHARACTERS,
  baseUrlExpected,
  isApiKeyValue,
  RESERVED_SOURCE_NAME,
  type SourceDraft,
} from './source-config.js';

/** A weight per variant label ('*': every variant without its own), or 'equal'. */
const declaredSplit = z.union([
  z.literal('equal'),
  z
    .record(z.string().min(1), z.number().positive().finite())
    .refine((weights) => Object.keys(weights).length > 0),
]);

/** The optional JSON config file (INSIGHTS_CONFIG): several sources. Unknown keys are errors. */
const fileSchema = z.strictObject({
  sources: z
    .array(
      z.strictObject({
        name: z.string().regex(RESERVED_SOURCE_NAME),
        base_url: z.url({ protocol: /^https?$/ }),
        // The key itself or the name of the environment variable that holds it.
        api_key: z.string().min(1).optional(),
        api_key_env: z.string().min(1).optional(),
        // The webhook token itself or the name of the environment variable that holds it.
        webhook_token: z.string().optional(),
        webhook_token_env: z.string().min(1).optional(),
        allowed_ips: z.array(z.string().refine(isCidr, CIDR_LIST_EXPECTED)).min(1).optional(),
        pii: z.enum(PII_MODES).optional(),
        requests_per_second: rpsNumber.optional(),
        expected_allocation: z
          .strictObject({
            default: declaredSplit.optional(),
            tests: z.record(z.string().min(1), declaredSplit).optional(),
          })
          .optional(),
      }),
    )
    .min(1),
});

/** The sources of the JSON file INSIGHTS_CONFIG names, each checked as the environment's one is. */
export function readSourcesFile(
  path: string,
  env: Env,
  readFile: (path: string) => string,
  sourcesFor: 'api' | 'webhooks',
  problems: ConfigProblem[],
): SourceDraft[] {
  let text: string;
  try {
    text = readFile(path);
  } catch {
    problems.push({ variable: 'INSIGHTS_CONFIG', expected: `a readable JSON file (could not read ${path})` });
    return [];
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    problems.push({
      variable: 'INSIGHTS_CONFIG',
      expected: `a JSON file (${path} is not valid JSON${jsonErrorPlace(text)})`,
    });
    return [];
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const path = formatPath(issue.path);
      problems.push({
        variable: path === '' ? 'INSIGHTS_CONFIG' : `INSIGHTS_CONFIG ${path}`,
        expected: issue.message,
      });
    }
    return [];
  }
  const sources: SourceDraft[] = [];
  const seen = new Set<string>();
  parsed.data.sources.forEach((source, index) => {
    const where = `INSIGHTS_CONFIG sources[${index}]`;
    if (seen.has(source.name))
      problems.push({ variable: `${where}.name`, expected: 'a name no other source uses' });
    seen.add(source.name);
    const urlExpected = baseUrlExpected(source.base_url);
    if (urlExpected !== undefined) {
      problems.push({ variable: `${where}.base_url`, expected: urlExpected });
      return;
    }
    const apiKey = source.api_key ?? (source.api_key_env ? env[source.api_key_env] : undefined);
    if (sourcesFor === 'webhooks') {
      // serve reads no API: the key is neither needed nor checked.
    } else if (!apiKey) {
      problems.push({
        variable: source.api_key_env ? source.api_key_env : `${where}.api_key`,
        expected: 'the API key of the source (api_key, or api_key_env naming a set variable)',
        missing: true,
      });
      return;
    } else if (!isApiKeyValue(apiKey)) {
      problems.push({
        variable: source.api_key_env ? source.api_key_env : `${where}.api_key`,
        expected: API_KEY_CHARACTERS,
      });
      return;
    }
    if (source.webhook_token === undefined && source.webhook_token_env && !env[source.webhook_token_env]) {
      problems.push({ variable: source.webhook_token_env, expected: WEBHOOK_TOKEN_EXPECTED });
    }
    const webhook = webhookSettings(
      source.webhook_token !== undefined
        ? { variable: `${where}.webhook_token`, value: source.webhook_token }
        : {
            variable: source.webhook_token_env ?? `${where}.webhook_token`,
            value: source.webhook_token_env ? env[source.webhook_token_env] : undefined,
          },
      { variable: `${where}.allowed_ips`, value: source.allowed_ips },
      problems,
    );
    sources.push({
      name: source.name,
      baseUrl: source.base_url.replace(/\/+$/, ''),
      apiKey: apiKey ?? '',
      ...webhook,
      piiMode: source.pii,
      ...(source.requests_per_second === undefined ? {} : { requestsPerSecond: source.requests_per_second }),
      ...(source.expected_allocation === undefined ? {} : { expectedAllocation: source.expected_allocation }),
    });
  });
  return sources;
}

function formatPath(path: PropertyKey[]): string {
  return path
    .map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '');
}
