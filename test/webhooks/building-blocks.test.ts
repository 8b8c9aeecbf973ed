import fc from 'fast-check';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { classifyDatabaseError } from '../../src/db/transaction.js';
import { createAllowList } from '../../src/webhooks/allow-list.js';
import { bodyHash } from '../../src/webhooks/body-hash.js';
import { checkBody } from '../../src/webhooks/check-body.js';
import { fieldPath, jsonDepth, storableText, unstorableStringPath } from '../../src/webhooks/json-limits.js';
import { maskUrl } from '../../src/webhooks/mask-url.js';
import { tokensMatch } from '../../src/webhooks/token.js';
import { feedbackBody, surveyBody, visitor } from './webhook-helpers.js';

describe('tokensMatch', () => {
  it('is true only for the very same token, whatever the lengths', () => {
    const token = 'abcdefghijklmnopqrstuvwx';
    expect(tokensMatch(token, token)).toBe(true);
    for (const other of [
      '',
      'a',
      `${token}y`,
      token.slice(0, -1),
      token.toUpperCase(),
      `${token.slice(0, -1)}X`,
    ]) {
      expect(tokensMatch(token, other), other).toBe(false);
    }
  });
});

describe('maskUrl', () => {
  const known = new Set(['main']);
  it.each([
    ['/webhooks/main/s3cr3t-token', '/webhooks/main/***'],
    ['/webhooks/main/s3cr3t-token?x=s3cr3t', '/webhooks/main/***'],
    ['/webhooks/main/s3cr3t/more', '/webhooks/main/***'],
    ['/webhooks/s3cr3t-token', '/webhooks/***'],
    ['/webhooks/unknown/s3cr3t', '/webhooks/***'],
    ['/s3cr3t-token-long-enough-to-be-a-token', '/***'],
    ['/healthz', '/healthz'],
    ['/readyz?verbose', '/readyz'],
    ['/hooks/main/s3cr3t', '/hooks/***'],
  ])('%s -> %s', (url, masked) => {
    expect(maskUrl(url, known)).toBe(masked);
  });

  it('whatever follows a configured source, the logged path is the same', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (secret) => {
        expect(maskUrl(`/webhooks/main/${secret}`, known)).toBe('/webhooks/main/***');
      }),
    );
  });
});

describe('createAllowList', () => {
  const allowed = createAllowList(['10.1.0.0/16', '192.0.2.7', '2001:db8::/32']);
  it.each([
    ['10.1.255.3', true],
    ['10.2.0.1', false],
    ['192.0.2.7', true],
    ['192.0.2.8', false],
    ['::ffff:10.1.0.1', true],
    ['2001:db8::1', true],
    ['2001:db9::1', false],
    ['::1', false],
  ])('%s -> %s', (address, expected) => {
    expect(allowed(address)).toBe(expected);
  });
});

describe('bodyHash', () => {
  it('ignores key order and whitespace, and tells any other difference apart', () => {
    const body = feedbackBody();
    const { visitor, ...rest } = body;
    const reordered = JSON.parse(
      `{ "visitor": ${JSON.stringify(visitor, null, 2)},\n ${JSON.stringify(rest).slice(1)}`,
    );
    expect(Object.keys(reordered)[0]).toBe('visitor');
    expect(bodyHash(reordered)).toBe(bodyHash(body));
    expect(bodyHash(feedbackBody({ comment: 'Checkout was quick ' }))).not.toBe(bodyHash(body));
    expect(bodyHash({ a: 1 })).not.toBe(bodyHash({ a: '1' }));
  });

  it('is stable across releases: sha256 hex of the canonical JSON', () => {
    // Stored as the delivery's dedupe key: another value for the same body would store a
    // redelivery sent across an upgrade as a new delivery.
    expect(bodyHash({ type: 'feedback', b: 2, a: { d: null, c: [1, 'x'] } })).toBe(
      '0e2e9230067fa17f59742e8f49b7b87178d59e073a5b73adad30775b3c8f5586',
    );
  });
});

describe('checkBody', () => {
  it('accepts both spec 6 bodies, and extra fields', () => {
    expect(checkBody(feedbackBody())).toMatchObject({ ok: true, type: 'feedback' });
    expect(checkBody({ ...surveyBody(), x_new: 1 })).toMatchObject({ ok: true, type: 'survey' });
  });
  it('names every field in trouble', () => {
    const result = checkBody({
      ...surveyBody(),
      question_id: '3',
      visitor: { ...surveyBody().visitor, id: '' },
    });
    expect(result).toMatchObject({
      ok: false,
      type: 'survey',
      issues: [{ field: 'question_id' }, { field: 'visitor.id' }],
    });
  });
  it('says a timestamp lacks its milliseconds, and only that (the date itself is real)', () => {
    const result = checkBody({
      ...feedbackBody(),
      visitor: { ...visitor(), created_at: '2026-03-10T12:00:00Z' },
    });
    expect(result).toEqual({
      ok: false,
      type: 'feedback',
      issues: [
        {
          field: 'visitor.created_at',
          message: 'has no milliseconds: the spec requires YYYY-MM-DDThh:mm:ss.sssZ (e.g. 12:00:00.000Z)',
        },
      ],
    });
  });
  it('calls a timestamp in the right shape on a day that does not exist not a real calendar date/time', () => {
    const result = checkBody({
      ...feedbackBody(),
      visitor: { ...visitor(), created_at: '2026-02-30T12:00:00.000Z' },
    });
    expect(result).toMatchObject({
      issues: [{ field: 'visitor.created_at', message: 'not a real calendar date/time' }],
    });
  });
});

describe('jsonDepth and unstorableStringPath', () => {
  it('measures depth without recursion, so a very deep value is no stack overflow', () => {
    expect(jsonDepth(1)).toBe(0);
    expect(jsonDepth({ a: [1, { b: {} }] })).toBe(4);
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`);
    expect(jsonDepth(deep)).toBe(65);
  });
  it('finds U+0000 and unpaired surrogates in values and keys, and passes paired ones', () => {
    expect(unstorableStringPath({ a: { b: 'ok 😀' } })).toBeUndefined();
    expect(unstorableStringPath({ a: { b: 'x\u0000' } })).toBe('a.b');
    expect(unstorableStringPath({ a: ['fine', '\ud83d'] })).toBe('a.1');
    expect(unstorableStringPath({ 'k\udc00': 1 })).toBe('k\ufffd');
    expect(storableText('a\u0000b\ud800c😀')).toBe('a\ufffdb\ufffdc😀');
  });
  it('names a field under an empty key too: the path is never empty', () => {
    expect(unstorableStringPath({ '': '\u0000' })).toBe('""');
    expect(unstorableStringPath({ visitor: { '': { x: '\ud800' } } })).toBe('visitor."".x');
    expect(fieldPath([])).toBe('(body)');
    expect(fieldPath(['items', 0, ''])).toBe('items.0.""');
  });
});

describe('classifyDatabaseError', () => {
  const sqlError = (code: string) => Object.assign(new pg.DatabaseError('x', 1, 'error'), { code });
  it('tells an unreachable database from refused data and from a bug', () => {
    expect(
      classifyDatabaseError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBe('unavailable');
    expect(classifyDatabaseError(new Error('Connection terminated unexpectedly'))).toBe('unavailable');
    expect(classifyDatabaseError(sqlError('57P01'))).toBe('unavailable');
    expect(classifyDatabaseError(sqlError('53300'))).toBe('unavailable');
    expect(classifyDatabaseError(sqlError('22008'))).toBe('data');
    expect(classifyDatabaseError(sqlError('23503'))).toBe('data');
    expect(classifyDatabaseError(sqlError('42703'))).toBe('bug');
    expect(classifyDatabaseError(new TypeError('x is undefined'))).toBe('bug');
  });
});
