import { describe, expect, test } from 'vitest';
import { copyProblem, manifest, type TreeEntry } from '../../src/db/embedded-copy.js';

/**
 * A copy of the binaries is reused only while it holds what the package holds (same files, kinds,
 * sizes, executable bits, link targets) and nobody but root could have changed it.
 */

const file = (path: string, size: number, extra: Partial<TreeEntry> = {}): TreeEntry => ({
  path,
  kind: 'file',
  size,
  executable: false,
  uid: 0,
  mode: 0o100644,
  ...extra,
});
const source: TreeEntry[] = [
  { ...file('bin', 0), kind: 'directory', mode: 0o40755 },
  file('bin/initdb', 190_840, { executable: true, mode: 0o100755 }),
  file('lib/libpq.so.5.17', 341_552),
  { ...file('lib/libpq.so', 13), kind: 'symlink', target: 'libpq.so.5.17', mode: 0o120777 },
];

describe('copyProblem', () => {
  test('an identical root-owned copy is fine, whatever the order its entries were read in', () => {
    expect(copyProblem(source, [...source].reverse())).toBeUndefined();
  });

  test('a missing file, another size or a lost executable bit: its files differ', () => {
    expect(copyProblem(source, source.slice(0, 3))).toBe('its files differ from the package');
    expect(
      copyProblem(
        source,
        source.map((e) => (e.path === 'bin/initdb' ? { ...e, size: 1 } : e)),
      ),
    ).toBe('its files differ from the package');
    expect(
      copyProblem(
        source,
        source.map((e) => (e.path === 'bin/initdb' ? { ...e, executable: false } : e)),
      ),
    ).toBe('its files differ from the package');
  });

  test('a file another user owns, or that group or others may write, is not trusted', () => {
    expect(
      copyProblem(
        source,
        source.map((e) => (e.path === 'bin/initdb' ? { ...e, uid: 1000 } : e)),
      ),
    ).toBe('bin/initdb is not owned by root and writable by root alone');
    expect(
      copyProblem(
        source,
        source.map((e) => (e.path === 'lib/libpq.so.5.17' ? { ...e, mode: 0o100666 } : e)),
      ),
    ).toBe('lib/libpq.so.5.17 is not owned by root and writable by root alone');
  });

  test('the manifest names each entry once, with its link target', () => {
    expect(manifest(source).split('\n')).toHaveLength(4);
    expect(manifest(source)).toContain('symlink\tlib/libpq.so\t0\t-\tlibpq.so.5.17');
  });
});
