import * as z from 'zod';
import type { ConfigProblem } from '../errors.js';
import { normalizeKey, PII_MODES, type PiiMode } from '../schemas/pii.js';
import { checkPiiKey, describePiiKeyRefusal, PII_KEY_REQUIRED } from './pii-key.js';
import type { SourceConfig, SourceDraft } from './source-config.js';

/** INSIGHTS_PII, INSIGHTS_PII_KEY (its strength: pii-key.ts) and INSIGHTS_PII_EXTRA_KEYS, and the policy a source gets from them. */

export function readPiiMode(raw: string | undefined, problems: ConfigProblem[]): { piiMode?: PiiMode } {
  const value = raw?.trim();
  if (value === undefined || value === '') return {};
  const parsed = z.enum(PII_MODES).safeParse(value);
  if (parsed.success) return { piiMode: parsed.data };
  problems.push({ variable: 'INSIGHTS_PII', expected: `one of ${PII_MODES.join(', ')}` });
  return {};
}

/**
 * Taken as given (not trimmed: it is the HMAC key, and trimming would change the hashes of a key
 * in use); empty counts as unset. `lookUpDigests`: LoadConfigOptions.lookUpPiiKeyDigests.
 */
export function readPiiKey(
  raw: string | undefined,
  lookUpDigests: boolean,
  problems: ConfigProblem[],
): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  const verdict = checkPiiKey(raw, lookUpDigests);
  if (verdict.ok) return raw;
  problems.push({ variable: 'INSIGHTS_PII_KEY', expected: describePiiKeyRefusal(verdict.refusal) });
  return undefined;
}

/**
 * INSIGHTS_PII_EXTRA_KEYS: more keys whose values are personal data, comma-separated, added to
 * PERSONAL_KEYS for every source that hashes or drops (matched the same way, after normalizeKey).
 */
export function readPiiExtraKeys(
  raw: string | undefined,
  problems: ConfigProblem[],
): ReadonlySet<string> | undefined {
  const value = raw?.trim();
  if (value === undefined || value === '') return undefined;
  const keys = value.split(',').map((key) => normalizeKey(key.trim()));
  if (keys.every((key) => key !== '' && key.length <= 128)) return Object.freeze(new Set(keys));
  problems.push({
    variable: 'INSIGHTS_PII_EXTRA_KEYS',
    expected: 'a comma-separated list of JSON keys whose values are personal data, e.g. birthday,postal_code',
  });
  return undefined;
}

/** keep (or unset) adds nothing, so a default configuration stays as it was; hash and drop need the key. */
export function withPiiPolicy(
  draft: SourceDraft,
  key: string | undefined,
  extraKeys: ReadonlySet<string> | undefined,
  problems: ConfigProblem[],
): SourceConfig {
  const { piiMode, ...source } = draft;
  if (piiMode === undefined || piiMode === 'keep') return source;
  if (key === undefined) {
    if (!problems.some((p) => p.variable === 'INSIGHTS_PII_KEY'))
      problems.push({ variable: 'INSIGHTS_PII_KEY', expected: PII_KEY_REQUIRED });
    return source;
  }
  return {
    ...source,
    pii: Object.freeze(extraKeys === undefined ? { mode: piiMode, key } : { mode: piiMode, key, extraKeys }),
  };
}
