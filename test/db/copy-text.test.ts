import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type CopyValue, copyLine } from '../../src/db/copy-text.js';

/**
 * A reference reader of one COPY text-format line, written from the PostgreSQL documentation:
 * fields split on raw tabs, `\N` alone is NULL, and backslash sequences stand for \, tab, LF, CR.
 */
function decodeLine(line: string): (string | null)[] {
  if (!line.endsWith('\n')) throw new Error('a COPY line ends with a newline');
  const body = line.slice(0, -1);
  if (body.includes('\n') || body.includes('\r')) throw new Error('raw line break inside a line');
  return body.split('\t').map((field) => {
    if (field === '\\N') return null;
    let out = '';
    for (let i = 0; i < field.length; i++) {
      const char = field[i];
      if (char !== '\\') {
        out += char;
        continue;
      }
      const next = field[++i];
      const decoded =
        next === '\\' ? '\\' : next === 't' ? '\t' : next === 'n' ? '\n' : next === 'r' ? '\r' : undefined;
      if (decoded === undefined) throw new Error(`unexpected escape \\${next ?? '(end)'}`);
      out += decoded;
    }
    return out;
  });
}

describe('copyLine', () => {
  it('separates fields with tabs and ends the line with a newline', () => {
    expect(copyLine(['a', 'b', 'c'])).toBe('a\tb\tc\n');
    expect(copyLine(['only'])).toBe('only\n');
  });

  it('writes null as \\N, and the empty string as an empty field', () => {
    expect(copyLine([null, '', null])).toBe('\\N\t\t\\N\n');
  });

  it('escapes backslash, tab, newline and carriage return', () => {
    expect(copyLine(['a\tb', 'line1\nline2', 'cr\rhere', 'C:\\dir'])).toBe(
      'a\\tb\tline1\\nline2\tcr\\rhere\tC:\\\\dir\n',
    );
  });

  it('writes a string that reads \\N as text, not as null', () => {
    expect(copyLine(['\\N'])).toBe('\\\\N\n');
    expect(decodeLine(copyLine(['\\N']))).toEqual(['\\N']);
  });

  it('drops the NUL character, which a Postgres text value cannot hold', () => {
    expect(copyLine(['a\0b\0'])).toBe('ab\n');
  });

  it('writes booleans as t and f', () => {
    expect(copyLine([true, false])).toBe('t\tf\n');
  });

  it('writes a Date as its ISO 8601 UTC string', () => {
    expect(copyLine([new Date(Date.UTC(2026, 2, 10, 7, 5, 3, 9))])).toBe('2026-03-10T07:05:03.009Z\n');
  });

  it('writes numbers as JavaScript prints them, and non-finite numbers as null', () => {
    expect(copyLine([0, 42, -7, 1.5, 1e21])).toBe('0\t42\t-7\t1.5\t1e+21\n');
    expect(copyLine([Number.NaN, Number.POSITIVE_INFINITY])).toBe('\\N\t\\N\n');
  });

  it('reads back, with a reference decoder, as the values it was given', () => {
    const value: fc.Arbitrary<CopyValue> = fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.integer(),
      fc.string({ unit: fc.constantFrom('a', 'Z', '9', ' ', '\\', '\t', '\n', '\r', 'N', '.', 'é', '🙂') }),
      fc.string(),
    );
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 8 }), (row) => {
        const expected = row.map((v) =>
          v === null ? null : typeof v === 'boolean' ? (v ? 't' : 'f') : String(v),
        );
        expect(decodeLine(copyLine(row))).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });
});
