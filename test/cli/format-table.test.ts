import { describe, expect, it } from 'vitest';
import { fitTable, formatTable } from '../../src/cli/format-table.js';

describe('formatTable', () => {
  it('pads text left-aligned and numbers right-aligned, two spaces between columns', () => {
    const table = formatTable(
      ['source', 'resource', 'fetched'],
      [
        ['shop', 'feedback', 1234],
        ['blog-eu', 'survey', 7],
      ],
    );
    expect(table.split('\n')).toEqual([
      'source   resource  fetched',
      'shop     feedback     1234',
      'blog-eu  survey          7',
    ]);
  });

  it('keeps headers left-aligned, also above a numeric column', () => {
    expect(formatTable(['n', 'name'], [[12345, 'x']]).split('\n')).toEqual(['n      name', '12345  x']);
  });

  it('aligns a number-like string as text, a number as a number', () => {
    expect(formatTable(['value'], [['12'], [3456]]).split('\n')).toEqual(['value', '12', ' 3456']);
  });

  it('trims trailing spaces of every line', () => {
    const lines = formatTable(
      ['name', 'note'],
      [
        ['a', ''],
        ['bb', 'long note'],
      ],
    ).split('\n');
    expect(lines).toEqual(['name  note', 'a', 'bb    long note']);
  });

  it('prints only the header when there are no rows', () => {
    expect(formatTable(['source', 'resource'], [])).toBe('source  resource');
  });
});

describe('formatTable on a terminal too narrow for it', () => {
  const header = ['source', 'resource', 'fetched', 'failed windows'];
  const rows = [
    ['shop', 'feedback', 1234, '0'],
    ['blog-eu', 'survey', 7, '1 (last: the server answered 503 three times in a row)'],
  ];

  it('keeps the table when it fits, and when the width is unknown (a pipe or a file)', () => {
    const table = formatTable(header, rows.slice(0, 1));
    expect(formatTable(header, rows.slice(0, 1), 80)).toBe(table);
    expect(formatTable(header, rows, undefined)).toBe(formatTable(header, rows));
  });

  it('wraps the widest text column before it turns rows into records', () => {
    const fitted = fitTable(header, rows, 60);
    expect(fitted.form).toBe('table');
    expect(fitted.text.split('\n')).toEqual([
      'source   resource  fetched  failed windows',
      'shop     feedback     1234  0',
      'blog-eu  survey          7  1 (last: the server answered 503',
      '                            three times in a row)',
    ]);
  });

  it('breaks headings between their words, then abbreviates them and says what each stands for', () => {
    const counts: [string, number, number, number][] = [['shop', 12, 3, 0]];
    const heading = ['source', 'windows run', { name: 'rejected items', short: 'rej' }, 'not run'];
    expect(formatTable(heading, counts, 40).split('\n')).toEqual([
      'source  windows  rejected  not',
      '        run      items     run',
      'shop         12         3    0',
    ]);
    expect(formatTable(heading, counts, 28).split('\n')).toEqual([
      'source  windows  rej  not',
      '        run           run',
      'shop         12    3    0',
      'abbreviations: rej =',
      'rejected items',
    ]);
  });

  it('shows each row as a record, a line per column, as psql -x does, when even that does not fit', () => {
    const fitted = fitTable(header, rows, 34);
    expect(fitted.form).toBe('records');
    expect(fitted.text.split('\n')).toEqual([
      '-[ RECORD 1 ]------------',
      'source         | shop',
      'resource       | feedback',
      'fetched        | 1234',
      'failed windows | 0',
      '-[ RECORD 2 ]-------------------',
      'source         | blog-eu',
      'resource       | survey',
      'fetched        | 7',
      'failed windows | 1 (last: the',
      '               | server answered',
      '               | 503 three times',
      '               | in a row)',
    ]);
  });

  it('no line of a record is wider than the terminal, however long a value', () => {
    const long = [['shop', 'feedback', 1, `1 (last: ${'word '.repeat(40).trim()})`]];
    const lines = formatTable(header, long, 50).split('\n');
    expect(lines.length).toBeGreaterThan(6);
    expect(lines.filter((line) => line.length > 50)).toEqual([]);
  });

  it('prints only the header when there are no rows, or "(none)" where the header does not fit', () => {
    expect(formatTable(header, [], 80)).toBe('source  resource  fetched  failed windows');
    expect(formatTable(header, [], 30)).toBe('(none)');
  });
});
