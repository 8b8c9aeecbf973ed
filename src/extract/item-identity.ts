import { hash } from 'node:crypto';

/**
 * What a day's plan reads off an item again and again, read once and kept on the item itself
 * under a symbol no JSON, key listing or comparison sees (not enumerable): answers are parsed
 * JSON, never changed after. A WeakMap cost a third of the work of identifying a small item, as
 * much as the hash. An item that cannot be added to is read every time.
 */
export function keptOnItem<T>(item: object, key: symbol, read: () => T): T {
  const kept = (item as Record<symbol, T | undefined>)[key];
  if (kept !== undefined) return kept;
  const value = read();
  if (Object.isExtensible(item)) Object.defineProperty(item, key, { value });
  return value;
}

const IDENTITY = Symbol('itemIdentity');

/**
 * An item's identity as its JSON text tells it, in 44 characters: what finds verbatim repeats
 * across a day's answers without keeping every item's text beside the item (10,000 feedback
 * items are 5 to 15 MB of text, a two-byte string as soon as a name is not Latin-1). A day's plan
 * asks it of the same items several times (repeats within an answer, the items a proof must find
 * again, a slice's answer): each item is serialised and hashed once.
 */
export function itemIdentity(item: unknown): string {
  if (typeof item !== 'object' || item === null) return identityOf(item);
  return keptOnItem(item, IDENTITY, () => identityOf(item));
}

/**
 * crypto.hash, one call, is the same digest as createHash().update().digest() without a Hash
 * object per item: about half the time for an item of a few hundred bytes.
 */
function identityOf(item: unknown): string {
  return hash('sha256', JSON.stringify(item) ?? 'undefined', 'base64');
}
