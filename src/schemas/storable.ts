import * as z from 'zod';
import { timestampSchema } from './timestamp.js';

/**
 * What PostgreSQL cannot store of an item that passed its schema. zod checks shapes and types;
 * the warehouse has limits of its own, and one item that hits them must not fail its day's
 * transaction. Found here, before anything is written, the item goes to `rejects`
 * with a precise reason instead.
 *
 * - U+0000 in a string or a key: PostgreSQL text and jsonb cannot hold it.
 * - A UTF-16 surrogate without its pair: jsonb refuses it, text would silently get U+FFFD.
 * - Nesting deeper than MAX_ITEM_DEPTH: the raw copy's JSON encoding and jsonb input both recurse.
 * - A timestamp in year 0000: the ISO pattern allows it, timestamptz does not.
 *
 * Integers need no check here: every integer the API sends lands in a bigint column (migration
 * 0009-value-ranges), and the schemas' z.int() already refuses what is beyond 2^53 - 1, where a
 * JSON number stops being read exactly (validate.ts words that rejection).
 */

/** One reason an item is rejected. */
export interface ItemProblem {
  /** The problem without the item's values: items broken the same way share it. */
  key: string;
  /** The problem precisely, values included, as it is stored in rejects.error. */
  message: string;
}

/** API items nest 2 levels (item, visitor); 64 leaves room for any unknown fields a service adds. */
export const MAX_ITEM_DEPTH = 64;

/** One item with thousands of bad strings is described by the first few, and a count. */
const MAX_PROBLEMS_LISTED = 10;

// A high surrogate with no low one after it, or a low surrogate with no high one before it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what is looked for.
const SUSPECT = /[\u0000\uD800-\uDFFF]/;

/** What PostgreSQL cannot hold in a string, named; undefined when it can hold all of it. */
function textDefect(text: string): string | undefined {
  // One scan for the common case: no NUL and no surrogate at all (emoji pairs are looked at below).
  if (!SUSPECT.test(text)) return undefined;
  const nul = text.includes('\u0000');
  const surrogate = LONE_SURROGATE.test(text);
  if (nul && surrogate) return 'contains U+0000 and an unpaired UTF-16 surrogate';
  if (nul) return 'contains U+0000';
  if (surrogate) return 'contains an unpaired UTF-16 surrogate';
  return undefined;
}

/** Text PostgreSQL can hold: U+0000 and unpaired surrogates become U+FFFD. */
export function storableText(text: string): string {
  return textDefect(text) === undefined
    ? text
    : text.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATES, '\uFFFD');
}

/** A field path as the errors show it (`visitor.name`, `(item)` for the item itself). */
export function formatPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(item)' : storableText(path.map(String).join('.'));
}

/**
 * The strings (values and keys, at any depth) PostgreSQL cannot store, and nesting beyond
 * MAX_ITEM_DEPTH, each with its path. Iterative: items are untrusted and may nest anything.
 */
export function unstorableJson(value: unknown): ItemProblem[] {
  const problems: ItemProblem[] = [];
  let unlisted = 0;
  const add = (problem: ItemProblem) => {
    if (problems.length < MAX_PROBLEMS_LISTED) problems.push(problem);
    else unlisted += 1;
  };
  let tooDeep = false;
  // Each entry links to its parent: a path is built only for a problem found, not per value.
  interface Visit {
    value: unknown;
    depth: number;
    /** Set for an object's property, whose key is checked when the entry comes up. */
    key?: string;
    index?: number;
    parent?: Visit;
  }
  const pathOf = (visit: Visit): string => {
    const path: Array<string | number> = [];
    for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent)
      path.unshift(at.key ?? at.index ?? '');
    return formatPath(path);
  };
  const stack: Visit[] = [{ value, depth: 0 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const current = next.value;
    const keyDefect = next.key === undefined ? undefined : textDefect(next.key);
    if (keyDefect !== undefined) {
      const where = `${pathOf(next)} (a key)`;
      add({
        key: `${where}: ${keyDefect}`,
        message: `${where}: ${keyDefect}, which PostgreSQL jsonb cannot hold`,
      });
    }
    if (typeof current === 'string') {
      const defect = textDefect(current);
      if (defect !== undefined) {
        const where = pathOf(next);
        add({
          key: `${where}: ${defect}`,
          message: `${where}: ${defect}, which PostgreSQL text cannot hold`,
        });
      }
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (next.depth + 1 > MAX_ITEM_DEPTH) {
      // Reported once: below the first too-deep level there is only more of the same.
      if (!tooDeep)
        add({
          key: `nested deeper than ${MAX_ITEM_DEPTH} levels`,
          message: `${pathOf(next)}: nested deeper than ${MAX_ITEM_DEPTH} levels, which the warehouse does not store (an API item nests 2)`,
        });
      tooDeep = true;
      continue;
    }
    const depth = next.depth + 1;
    // Pushed in reverse so that problems come out in the item's own order.
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--)
        stack.push({ value: current[i], depth, index: i, parent: next });
    } else {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        stack.push({ value: child, depth, key, parent: next });
      }
    }
  }
  if (unlisted > 0)
    problems.push({
      key: 'more strings PostgreSQL cannot hold',
      message: `and ${unlisted} more strings PostgreSQL cannot hold`,
    });
  return problems;
}

/**
 * Problems of the fields a schema types, in a value the schema accepted: a timestamp in year
 * 0000 matches the spec's pattern, but PostgreSQL's timestamps start at year 0001.
 */
export function unstorableFields(schema: z.ZodType, value: unknown): ItemProblem[] {
  const problems: ItemProblem[] = [];
  for (const path of timestampPaths(schema)) {
    const found = valueAt(value, path);
    if (typeof found === 'string' && found.startsWith('0000-')) {
      const where = formatPath(path);
      problems.push({
        key: `${where}: year 0000`,
        message: `${where}: ${found} is in year 0000, which a PostgreSQL timestamp cannot hold (its years start at 0001)`,
      });
    }
  }
  return problems;
}

const timestampPathsOf = new WeakMap<z.ZodType, string[][]>();

/** Where a schema puts timestampSchema, at any depth of its objects; computed once per schema. */
function timestampPaths(schema: z.ZodType): string[][] {
  const known = timestampPathsOf.get(schema);
  if (known !== undefined) return known;
  const paths: string[][] = [];
  const visit = (inner: z.ZodType, path: string[]) => {
    if (inner === timestampSchema) paths.push(path);
    else if (inner instanceof z.ZodNullable || inner instanceof z.ZodOptional)
      visit(inner.unwrap() as z.ZodType, path);
    else if (inner instanceof z.ZodObject)
      for (const [key, field] of Object.entries(inner.shape)) visit(field as z.ZodType, [...path, key]);
  };
  visit(schema, []);
  timestampPathsOf.set(schema, paths);
  return paths;
}

/** The value at a path of a parsed JSON value (own properties only), or undefined. */
export function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

export interface StorableCopy {
  /** The value itself when nothing had to change; else a copy PostgreSQL can hold as jsonb. */
  value: unknown;
  /** What the copy changed, for the stored error; empty when nothing. */
  notes: string[];
}

/**
 * A copy of a rejected item that the rejects table can hold: U+0000 and unpaired surrogates in
 * strings and keys become U+FFFD, and what is nested deeper than MAX_ITEM_DEPTH is replaced by
 * a note. Own "__proto__" keys stay plain keys. Iterative, like the checks.
 */
export function storableCopy(value: unknown): StorableCopy {
  let replaced = false;
  let cut = false;
  const text = (s: string) => {
    const storable = storableText(s);
    if (storable !== s) replaced = true;
    return storable;
  };
  const root: Record<string, unknown> = Object.create(null);
  const stack: Array<{
    target: Record<string, unknown> | unknown[];
    key: string | number;
    value: unknown;
    depth: number;
  }> = [{ target: root, key: 'value', value, depth: 0 }];
  for (let task = stack.pop(); task !== undefined; task = stack.pop()) {
    const { target, key, value: current, depth } = task;
    let copy: unknown = current;
    if (typeof current === 'string') copy = text(current);
    else if (current !== null && typeof current === 'object') {
      if (depth + 1 > MAX_ITEM_DEPTH) {
        copy = `(cut: nested deeper than ${MAX_ITEM_DEPTH} levels)`;
        cut = true;
      } else if (Array.isArray(current)) {
        const array: unknown[] = new Array(current.length);
        current.forEach((child: unknown, index) => {
          stack.push({ target: array, key: index, value: child, depth: depth + 1 });
        });
        copy = array;
      } else {
        // No prototype: an own "__proto__" key is copied as a plain key, not as a prototype.
        const object: Record<string, unknown> = Object.create(null);
        for (const [childKey, child] of Object.entries(current))
          stack.push({ target: object, key: text(childKey), value: child, depth: depth + 1 });
        copy = object;
      }
    }
    (target as Record<string | number, unknown>)[key] = copy;
  }
  const notes: string[] = [];
  if (replaced) notes.push('U+0000 and unpaired surrogates shown as U+FFFD');
  if (cut) notes.push(`nesting below ${MAX_ITEM_DEPTH} levels cut`);
  return notes.length === 0 ? { value, notes } : { value: root.value, notes };
}
