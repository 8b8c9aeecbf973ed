import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { describeShortage, resourceShortage } from '../../src/db/resource-shortage.js';

/** An error as pg gives it: a DatabaseError with the server's SQLSTATE and message. */
function serverError(code: string, message = 'the server says why'): pg.DatabaseError {
  const error = new pg.DatabaseError(message, 0, 'error');
  error.code = code;
  return error;
}

/** Every condition of SQLSTATE classes 53 and 54 (PostgreSQL's Appendix A), in words. */
const CONDITIONS: Record<string, string> = {
  '53000': 'insufficient resources',
  '53100': 'disk full',
  '53200': 'out of memory',
  '53300': 'too many connections',
  '53400': 'configuration limit exceeded',
  '54000': 'program limit exceeded',
  '54001': 'statement too complex',
  '54011': 'too many columns',
  '54023': 'too many arguments',
};

describe('a database that cannot do the work', () => {
  it.each(Object.entries(CONDITIONS))(
    'SQLSTATE %s is a shortage: %s, with a next step',
    (code, condition) => {
      const shortage = resourceShortage(serverError(code));
      expect(shortage).toMatchObject({ sqlState: code, condition, detail: 'the server says why' });
      expect(shortage?.next.length).toBeGreaterThan(20);
    },
  );

  it('a full disk says where to free space, in one line with the server message', () => {
    const shortage = resourceShortage(
      serverError('53100', 'could not extend file "base/16384/16500": No space left on device'),
    );
    expect(shortage?.next).toContain('free space');
    expect(shortage && describeShortage(shortage)).toBe(
      'disk full (SQLSTATE 53100: could not extend file "base/16384/16500": No space left on device)',
    );
  });

  it('a code of the classes PostgreSQL may add later is still a shortage of its class', () => {
    expect(resourceShortage(serverError('53999'))).toMatchObject({ condition: 'insufficient resources' });
    expect(resourceShortage(serverError('54999'))).toMatchObject({ condition: 'program limit exceeded' });
  });

  it('is found through the errors that wrap it (cause)', () => {
    const wrapped = new Error('storing the reading failed', {
      cause: new Error('transaction failed', { cause: serverError('53100') }),
    });
    expect(resourceShortage(wrapped)?.sqlState).toBe('53100');
  });

  it.each([
    ['23505', 'a unique violation'],
    ['22007', 'a bad value'],
    ['08006', 'a connection failure'],
    ['57P01', 'an administrator ending the session'],
    ['42P01', 'a missing table'],
    ['40P01', 'a deadlock'],
    ['5310', 'a code too short'],
  ])('%s (%s) is no shortage', (code) => {
    expect(resourceShortage(serverError(code))).toBeUndefined();
  });

  it('nor is an error without a SQLSTATE, or no error at all', () => {
    expect(resourceShortage(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).toBeUndefined();
    expect(resourceShortage(new TypeError('x is undefined'))).toBeUndefined();
    expect(resourceShortage(undefined)).toBeUndefined();
    expect(resourceShortage('53100')).toBeUndefined();
  });
});
