import { describe, expect, it } from 'vitest';
import { formatTable } from '../../src/cli/format-table.js';
import { oneLine, terminalText, wrapProse } from '../../src/log/terminal-text.js';

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

describe('sentences on a narrow terminal', () => {
  const sentence =
    'day windows: fetched = inserted + updated + unchanged + rejected + other (other: set aside in key_collisions, duplicates in a response, forgotten visitors, items of a failed day)';

  it('breaks a long line between words, continued two spaces in, never wider than the terminal', () => {
    const lines = wrapProse(sentence, 60).split('\n');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(60);
    expect(lines.slice(1).every((line) => line.startsWith('  ') && !line.startsWith('   '))).toBe(true);
    // Every word whole, in order: joining the lines gives the sentence back.
    expect(lines.map((line) => line.trim()).join(' ')).toBe(sentence);
  });

  it('keeps an indented line indented, its continuations further in', () => {
    const lines = wrapProse(`  demo/feedback: ${sentence}`, 50).split('\n');
    expect(lines[0]?.startsWith('  demo/feedback:')).toBe(true);
    expect(lines.slice(1).every((line) => line.startsWith('    ') && line.length <= 50)).toBe(true);
  });

  it('counts display width: wide characters take two columns', () => {
    const lines = wrapProse(`source 漢字漢字漢字漢字漢字 ${'word '.repeat(20).trim()}`, 30).split('\n');
    expect(lines[0]).toBe('source 漢字漢字漢字漢字漢字');
  });

  it('leaves table rows, commands indented four spaces, and every line of a pipe whole', () => {
    const table = formatTable(['source', 'resource', 'state'], [['shop', 'feedback', 'a'.repeat(80)]]);
    expect(wrapProse(table, 40)).toBe(table);
    const command = `    PGPASSWORD="$(cat '/a/very/long/path/to/the/password/file')" psql 'postgres://postgres@127.0.0.1:54329/postgres'`;
    expect(wrapProse(command, 40)).toBe(command);
    expect(wrapProse(sentence, undefined)).toBe(sentence);
  });

  it('a word longer than the terminal stays whole on a line of its own', () => {
    const path = `/work/${'deep/'.repeat(12)}insights-sync.password`;
    const lines = wrapProse(`password in ${path} while this command runs`, 40).split('\n');
    expect(lines).toContain(`  ${path}`);
  });
});
