import { describe, expect, it } from 'vitest';
import { formatTable } from '../../src/cli/format-table.js';

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
