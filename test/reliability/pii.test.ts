import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPersonalKey, PERSONAL_KEYS, protectPersonalData, storedVisitorId } from '../../src/privacy/pii.js';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { normalizeKey, type PiiPolicy } from '../../src/schemas/pii.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { feedback, recording } from '../helpers/api-items.js';

// As `openssl rand -hex 32` prints it (the key rule refuses anything else).
const KEY = '7d2a9f41c08e5b36a1f4d7c2e90b3a58f6c1d84e2b7a09f3c5d16e8a4b2f7c90';
const OTHER_KEY = 'e4c81b5f2a7d093c6b8e1f4a7d20c59b3e6f18a4c7d2b905e1a36f8c4d7b2e01';
const HASH: PiiPolicy = { mode: 'hash', key: KEY };
const DROP: PiiPolicy = { mode: 'drop', key: KEY };
const mac = (value: string, key = KEY) => createHmac('sha256', key).update(value).digest('hex');
const feedbackItem = (overrides: Record<string, unknown> = {}) =>
  feedbackSchema.parse({ ...feedback(), ...overrides });
const recordingItem = () => recordingSchema.parse(recording());

describe('protectPersonalData', () => {
  it('keep (or no setting) returns the very same value', () => {
    const item = feedbackItem();
    expect(protectPersonalData(item, { mode: 'keep' })).toBe(item);
    expect(protectPersonalData(item, undefined)).toBe(item);
  });

  it('hash: the visitor fields and the visitor id become their keyed HMAC; the rest is untouched', () => {
    const item = feedbackItem();
    const before = structuredClone(item);
    const out = protectPersonalData(item, HASH);
    expect(item).toEqual(before);
    expect(out.visitor).toEqual({
      ...item.visitor,
      id: mac(item.visitor.id),
      name: mac(item.visitor.name),
      email: mac(item.visitor.email),
      ip: mac(item.visitor.ip),
      user_agent: mac(item.visitor.user_agent),
    });
    const { visitor: _v, ...rest } = out;
    const { visitor: _w, ...restBefore } = item;
    expect(rest).toEqual(restBefore);
    // Same order of keys: raw reads like what the service sent.
    expect(Object.keys(out.visitor)).toEqual(Object.keys(item.visitor));
    expect(Object.keys(out)).toEqual(Object.keys(item));
  });

  it('hash is deterministic (joins and distinct counts survive) and depends on the key', () => {
    const a = protectPersonalData(feedbackItem(), HASH);
    const b = protectPersonalData(feedbackItem({ id: 99 }), HASH);
    expect(a.visitor).toEqual(b.visitor);
    const other = protectPersonalData(feedbackItem(), { mode: 'hash', key: OTHER_KEY });
    expect(other.visitor.email).not.toBe(a.visitor.email);
    expect(storedVisitorId(feedbackItem().visitor.id, HASH)).toBe(a.visitor.id);
    expect(storedVisitorId('v-1', { mode: 'keep' })).toBe('v-1');
  });

  it('drop: personal values become null, the visitor id a pseudonym (still a join key)', () => {
    const item = feedbackItem();
    const out = protectPersonalData(item, DROP);
    expect(out.visitor).toMatchObject({
      id: mac(item.visitor.id),
      name: null,
      email: null,
      ip: null,
      user_agent: null,
      company: item.visitor.company,
      device: item.visitor.device,
    });
  });

  it('recordings: user_ip and user_agent at the top level', () => {
    const item = recordingItem();
    expect(protectPersonalData(item, HASH)).toEqual({
      ...item,
      user_ip: mac(item.user_ip),
      user_agent: mac(item.user_agent),
    });
    expect(protectPersonalData(item, DROP)).toEqual({ ...item, user_ip: null, user_agent: null });
  });

  it('an empty or null value stays as it is: it holds nothing personal', () => {
    const out = protectPersonalData({ name: '', email: null, visitor: { id: '' } }, HASH);
    expect(out).toEqual({ name: '', email: null, visitor: { id: '' } });
  });

  it('rejects of any shape: personal keys at any depth, values of any type, a __proto__ key kept as data', () => {
    const reject = JSON.parse(
      '{"id":"1","__proto__":{"email":"a@b.example","polluted":true},"visitor":{"id":7,"name":{"first":"Ada"}},' +
        '"list":[{"user_ip":"192.0.2.1"},[{"ip":["10.0.0.1"]}]],"deep":{"x":{"user_agent":42}}}',
    ) as unknown;
    const out = protectPersonalData(reject, HASH) as Record<string, unknown>;
    const text = JSON.stringify(out);
    for (const clear of ['a@b.example', 'Ada', '192.0.2.1', '10.0.0.1', '"user_agent":42'])
      expect(text).not.toContain(clear);
    expect(Object.hasOwn(out, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect((out.visitor as { id: unknown }).id).toBe(mac('7'));
    expect((out.visitor as { name: unknown }).name).toBe(mac('{"first":"Ada"}'));
    expect(text).toContain('"polluted":true');
  });

  it('survives nesting far deeper than the call stack', () => {
    let deep: unknown = { email: 'deep@example.test' };
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const out = protectPersonalData(deep, DROP);
    let inner: unknown = out;
    for (let i = 0; i < 200_000; i++) inner = (inner as unknown[])[0];
    expect(inner).toEqual({ email: null });
  });

  it('property: no personal value survives anywhere, nothing else changes, the input is untouched', () => {
    const marker = fc.string({ minLength: 1, maxLength: 12 }).map((s) => `PII<${s}>`);
    const personalKey = fc.constantFrom(...PERSONAL_KEYS);
    // Any JSON, with personal values spliced in at random places of random objects.
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 6 }), tie('node'), { maxKeys: 4 }),
        fc.record({ key: personalKey, value: marker, rest: tie('node') }),
      ),
    })).node;
    const build = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(build);
      if (value === null || typeof value !== 'object') return value;
      const record = value as Record<string, unknown>;
      if ('key' in record && 'value' in record && 'rest' in record && typeof record.value === 'string') {
        const rest = build(record.rest);
        const holder: Record<string, unknown> =
          rest !== null && typeof rest === 'object' && !Array.isArray(rest) ? { ...rest } : { rest };
        holder[record.key as string] = record.value;
        return holder;
      }
      return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, build(v)]));
    };
    fc.assert(
      fc.property(tree, fc.constantFrom(HASH, DROP), (raw, policy) => {
        const input = build(raw);
        const snapshot = JSON.stringify(input);
        const out = protectPersonalData(input, policy);
        expect(JSON.stringify(input)).toBe(snapshot);
        expect(JSON.stringify(out)).not.toMatch(/PII</);
        // Only personal values (and visitor ids) differ: blank them on both sides and compare.
        const blank = (value: unknown, key?: string, parent?: string): unknown => {
          if (key !== undefined && (isPersonalKey(key) || (key === 'id' && parent === 'visitor'))) return '*';
          if (Array.isArray(value)) return value.map((v) => blank(v));
          if (value === null || typeof value !== 'object') return value;
          return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, blank(v, k, key)]));
        };
        expect(blank(out)).toEqual(blank(input));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('personal keys are matched whatever their case and punctuation', () => {
  const SPELLINGS = {
    email: ['email', 'Email', 'EMAIL', 'e-mail', 'E_Mail', 'e mail', 'mail', 'emailAddress', 'email_address'],
    ip: [
      'ip',
      'IP',
      'ip_address',
      'IpAddress',
      'ip-address',
      'user_ip',
      'userIp',
      'client_ip',
      'remote_addr',
    ],
    phone: ['phone', 'Phone', 'PHONE', 'phone_number', 'phoneNumber', 'telephone', 'tel', 'mobile'],
    name: [
      'name',
      'Name',
      'first_name',
      'firstName',
      'last_name',
      'LastName',
      'full_name',
      'surname',
      'username',
    ],
    agent: ['user_agent', 'userAgent', 'User-Agent', 'useragent'],
  };
  const personal = Object.values(SPELLINGS).flat();

  it('hash and drop reach every spelling, at any depth, in raw bodies of any shape', () => {
    const body = {
      id: 1,
      comment: 'kept',
      visitor: Object.fromEntries(personal.map((key) => [key, `PII-${key}`])),
      nested: [{ contact: Object.fromEntries(personal.map((key) => [key, `PII-${key}`])) }],
    };
    const hashed = protectPersonalData(body, HASH);
    const dropped = protectPersonalData(body, DROP);
    for (const key of personal) {
      expect(hashed.visitor[key], key).toBe(mac(`PII-${key}`));
      expect(dropped.visitor[key], key).toBeNull();
      expect(hashed.nested[0]?.contact[key], key).toBe(mac(`PII-${key}`));
      expect(dropped.nested[0]?.contact[key], key).toBeNull();
    }
    expect(JSON.stringify(hashed)).not.toContain('PII-');
    expect(JSON.stringify(dropped)).not.toContain('PII-');
    expect(hashed.comment).toBe('kept');
    expect(hashed.id).toBe(1);
  });

  it('keeps the keys the spec does not list as personal (test names, devices, places, ids)', () => {
    for (const key of [
      'test_name',
      'device',
      'browser',
      'os',
      'city',
      'country',
      'comment',
      'answer',
      'url',
      'id',
      'ipsum',
    ])
      expect(isPersonalKey(key), key).toBe(false);
    const item = {
      test_name: 'A',
      device: 'mobile',
      city: 'Berlin',
      visitor: { id: 'v-1', Email: 'a@b.test' },
    };
    expect(protectPersonalData(item, DROP)).toEqual({
      test_name: 'A',
      device: 'mobile',
      city: 'Berlin',
      visitor: { id: mac('v-1'), Email: null },
    });
  });

  it('the list is stored normalized: lower case, without - _ . and blanks', () => {
    for (const key of PERSONAL_KEYS) expect(normalizeKey(key)).toBe(key);
    expect(normalizeKey(' E-Mail_Address. ')).toBe('emailaddress');
    expect(isPersonalKey('postal_code')).toBe(false);
    expect(isPersonalKey('Postal-Code', new Set(['postalcode']))).toBe(true);
  });
});
