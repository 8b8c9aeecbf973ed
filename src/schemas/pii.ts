/**
 * What a source does with visitors' personal data (INSIGHTS_PII, a source's `pii`): the words of
 * the setting, read by config and applied by src/privacy/pii.ts, which says what each mode does.
 */
export const PII_MODES = ['keep', 'hash', 'drop'] as const;
export type PiiMode = (typeof PII_MODES)[number];

/**
 * A source's setting; the key is needed (and checked by loadConfig) for hash and drop.
 * `extraKeys`: more personal keys than PERSONAL_KEYS (INSIGHTS_PII_EXTRA_KEYS), normalized.
 */
export type PiiPolicy =
  | { mode: 'keep' }
  | { mode: 'hash' | 'drop'; key: string; extraKeys?: ReadonlySet<string> };

/**
 * A key as it is compared with PERSONAL_KEYS: lower case, without `-`, `_`, `.` and white space
 * (`E-Mail`, `e_mail` and `EMAIL` are `email`; `IP Address` is `ipaddress`).
 */
export function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[-_.\s]/g, '');
}
