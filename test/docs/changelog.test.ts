import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../migrations/index.js';

/** CHANGELOG.md has an entry per migration, newest first, each with its upgrade note. */

const read = (file: string) => readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');
const CHANGELOG = read('CHANGELOG.md');

/** `0026-moved-items` is headed `### 0026 moved items`. */
function heading(name: string): string {
  const [number, ...words] = name.split('-');
  return `### ${number} ${words.join(' ')}`;
}

describe('CHANGELOG.md', () => {
  const names = Object.keys(migrations).sort();

  it('has one entry per migration, newest first', () => {
    const found = names.map((name) => CHANGELOG.indexOf(`\n${heading(name)}\n`));
    expect(names.filter((_, i) => found[i] === -1)).toEqual([]);
    const order = [...found].sort((a, b) => b - a);
    expect(found).toEqual(order);
  });

  it('says for every migration what to do', () => {
    for (const name of names) {
      const at = CHANGELOG.indexOf(`\n${heading(name)}\n`);
      const next = CHANGELOG.indexOf('\n### ', at + 1);
      const entry = CHANGELOG.slice(at, next === -1 ? undefined : next);
      expect(entry, name).toContain('- Upgrade:');
    }
  });

  it('is what the README points an upgrade at', () => {
    expect(read('README.md')).toContain('[CHANGELOG.md](CHANGELOG.md)');
  });
});
