import { createHmac } from 'node:crypto';
import { canonicalJson } from '../db/canonical-json.js';
import { normalizeKey, type PiiPolicy } from '../schemas/pii.js';

/**
 * Personal data of visitors (spec 2.5, 2.6), and what a source does with it before anything is
 * written: to a table, to the raw JSON columns, to the rejects table or to webhook_events.
 *
 * - keep: stored as the service sends it.
 * - hash: each personal value becomes the hex HMAC-SHA-256 of the value under INSIGHTS_PII_KEY.
 *   Equal values give equal hashes, so analysts can still join and count distinct visitors
 *   (or e-mail addresses), but nobody without the key can tell the value back.
 * - drop: each personal value becomes null.
 *
 * The visitor's `id` is the key analysts join on (feedback.visitor_id = visitors.id). It is not
 * listed as personal data, but it is the service's identifier of a person, so under hash AND
 * drop it becomes its HMAC: a pseudonym that still joins and counts, the same under both modes
 * (switching between them does not split visitors), and that `forget --visitor ID` can compute.
 *
 * Which keys are personal: PERSONAL_KEYS (and a source's extra keys, INSIGHTS_PII_EXTRA_KEYS),
 * compared after normalizeKey, so `Email`, `EMAIL`, `e-mail` and `E_Mail` are all `email`:
 * rejected items and webhook bodies are untrusted and need not spell keys as the spec does.
 */

/**
 * Keys whose values are personal data, wherever they occur in an item or a body, as normalizeKey
 * leaves them. The spec's own (2.5, 2.6) are `name`, `email`, `ip`, `user_ip`, `user_agent`; the
 * others are the usual spellings of the same data (and phone numbers) that a rejected item, a
 * webhook body or a future API version may carry.
 */
export const PERSONAL_KEYS: ReadonlySet<string> = new Set(
  [
    // The spec's fields.
    'name',
    'email',
    'ip',
    'user_ip',
    'user_agent',
    // E-mail addresses.
    'e-mail',
    'mail',
    'email_address',
    'user_email',
    // IP addresses.
    'ip_address',
    'client_ip',
    'remote_ip',
    'remote_addr',
    'x_forwarded_for',
    // Phone numbers.
    'phone',
    'phone_number',
    'telephone',
    'tel',
    'mobile',
    // Names.
    'first_name',
    'last_name',
    'full_name',
    'given_name',
    'family_name',
    'surname',
    'user_name',
    'username',
    // User agents.
    'useragent',
  ].map(normalizeKey),
);

/** Whether the values under `key` are personal data (PERSONAL_KEYS or the policy's extra keys). */
export function isPersonalKey(key: string, extraKeys?: ReadonlySet<string>): boolean {
  const normalized = normalizeKey(key);
  return PERSONAL_KEYS.has(normalized) || (extraKeys?.has(normalized) ?? false);
}

/** The object under this key is a visitor (spec 2.6): its `id` is pseudonymised too. */
const VISITOR_KEY = 'visitor';

/**
 * A copy of `value` with every personal value hashed or dropped, at any depth, in objects of any
 * shape (rejected items are untrusted and may nest anything anywhere). Pure: the input is not
 * changed; under keep it is returned as is.
 *
 * The static type is the input's: under drop, personal strings become null. Every column such a
 * value reaches is nullable (migration 0005-privacy), and `raw` is JSON.
 */
export function protectPersonalData<T>(value: T, policy: PiiPolicy | undefined): T {
  if (policy === undefined || policy.mode === 'keep') return value;
  const replace = (personal: unknown): unknown => {
    if (personal === null || personal === undefined || personal === '') return personal;
    return policy.mode === 'drop' ? null : hmac(policy.key, personal);
  };
  const pseudonym = (id: unknown): unknown =>
    id === null || id === undefined || id === '' ? id : hmac(policy.key, id);

  // Iterative, not recursive: an untrusted item may nest deeper than the call stack allows.
  const root: { value?: unknown } = {};
  const stack: Array<{ target: Record<string, unknown> | unknown[]; key: string | number; value: unknown }> =
    [{ target: root as Record<string, unknown>, key: 'value', value }];
  for (let task = stack.pop(); task !== undefined; task = stack.pop()) {
    const { target, key, value: current } = task;
    let copy: unknown = current;
    if (Array.isArray(current)) {
      const array: unknown[] = new Array(current.length);
      current.forEach((child, index) => {
        stack.push({ target: array, key: index, value: child });
      });
      copy = array;
    } else if (current !== null && typeof current === 'object') {
      const object: Record<string, unknown> = {};
      const isVisitor = key === VISITOR_KEY && !Array.isArray(target);
      for (const [childKey, child] of Object.entries(current)) {
        if (isPersonalKey(childKey, policy.extraKeys)) define(object, childKey, replace(child));
        else if (isVisitor && childKey === 'id') define(object, childKey, pseudonym(child));
        else {
          // Defined now, filled when its task runs: the copy keeps the keys in their order.
          define(object, childKey, undefined);
          stack.push({ target: object, key: childKey, value: child });
        }
      }
      copy = object;
    }
    if (Array.isArray(target)) target[key as number] = copy;
    else define(target, String(key), copy);
  }
  return root.value as T;
}

/**
 * The visitor id as a source with this policy stores it: the id itself under keep, its HMAC
 * under hash and drop. For erasure requests (`forget --visitor ID`).
 */
export function storedVisitorId(id: string, policy: PiiPolicy | undefined): string {
  return policy === undefined || policy.mode === 'keep' ? id : hmac(policy.key, id);
}

/** Hex HMAC-SHA-256; a value that is not a string is hashed as its canonical JSON. */
export function hmac(key: string, value: unknown): string {
  const text = typeof value === 'string' ? value : (canonicalJson(value) ?? '');
  return createHmac('sha256', key).update(text, 'utf8').digest('hex');
}

/** An own property even for the key "__proto__", which plain assignment would turn into a prototype. */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
