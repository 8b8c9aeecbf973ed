import { describe, expect, it } from 'vitest';
import { formatTable } from '../../src/cli/format-table.js';
import { oneLine, terminalText } from '../../src/log/terminal-text.js';

describe('terminal text', () => {
  it('shows each control character as its JSON escape; keeps newline and tab in multi-line text', () => {
    expect(terminalText('a\u001b[2Jb\r\u009b1m\u202ec\n\td\u007f')).toBe(
      'a\\u001b[2Jb\\u000d\\u009b1m\\u202ec\n\td\\u007f',
    );
    expect(terminalText('plain text, é ü 漢字 ✓')).toBe('plain text, é ü 漢字 ✓');
  });

  it('one value on one line: a newline in it is shown, not followed', () => {
    expect(oneLine('shop\nforged')).toBe('shop\\u000aforged');
  });

  it('a table cell cannot break the table into a forged line', () => {
    const table = formatTable(['source', 'state'], [['shop\nforged: ok', 'failed']]);
    expect(table.split('\n')).toHaveLength(2);
    expect(JSON.parse(`"${'shop\\u000a'}"`)).toBe('shop\n'); // the escape reads back as JSON
  });
});
