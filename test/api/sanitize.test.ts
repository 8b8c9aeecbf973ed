import { describe, expect, it } from 'vitest';
import { bodySnippet, NetworkError, scrubSecret, toNetworkError } from '../../src/api/sanitize.js';

describe('scrubSecret', () => {
  it('replaces every occurrence of the secret', () => {
    expect(scrubSecret('a SECRET b SECRET', 'SECRET')).toBe('a [redacted] b [redacted]');
  });

  it('leaves text alone when the secret is empty', () => {
    expect(scrubSecret('abc', '')).toBe('abc');
  });
});

describe('bodySnippet', () => {
  it('is one printable line, capped', () => {
    const snippet = bodySnippet(`<html>\r\n\t<body>\u0000\u001b[31m${'z'.repeat(500)}`, 'k3y', 30);
    expect(snippet).toBe('<html> <body> [31mzzzzzzzzzzzz...');
    expect(snippet.length).toBeLessThanOrEqual(33);
  });

  it('removes the key even when it sits at the cut', () => {
    const body = `${'a'.repeat(55)}SECRET-KEY-VALUE`;
    expect(bodySnippet(body, 'SECRET-KEY-VALUE')).not.toContain('SECRET');
  });
});

describe('toNetworkError', () => {
  it('keeps the messages and the innermost code, nothing else', () => {
    const inner = Object.assign(new Error('read ECONNRESET'), {
      code: 'ECONNRESET',
      request: { headers: { authorization: 'k3y-value' } },
    });
    const wrapped = new TypeError('fetch failed', { cause: inner });

    const error = toNetworkError(wrapped, 'k3y-value');

    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toBe('fetch failed: read ECONNRESET');
    expect(error.code).toBe('ECONNRESET');
    expect(error.cause).toBeUndefined();
    expect(Object.keys(error).sort()).toEqual(['code', 'name']);
  });

  it('copes with a thrown non-error', () => {
    expect(toNetworkError('boom', 'secret').message).toBe('unknown network failure');
  });
});
