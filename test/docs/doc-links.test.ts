import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Where the tool's output, its messages and the docs send a reader, the heading is there: every
 * `see "X" in the README` (or in docs/Y.md) the code prints resolves to a heading named X of that
 * file, and every relative link of the README and docs/ to a file and, with `#anchor`, to one of
 * its headings. A heading renamed or moved without its pointers fails here.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** Markdown without its fenced code blocks (a `# comment` there is no heading). */
function prose(markdown: string): string {
  return markdown.replace(/^(`{3,})[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '');
}

/** The text of every ATX heading. */
function headings(markdown: string): string[] {
  return [...prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)].map((m) => m[1] ?? '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, blanks to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const heading of headings(markdown)) {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.add(count === 0 ? base : `${base}-${count}`);
  }
  return out;
}

function filesUnder(dir: string, keep: (file: string) => boolean): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)))
    .filter(keep);
}

interface Pointer {
  from: string;
  file: string;
  heading: string;
}

/** The pointers to a named heading in a text: README "X", "X" in the README, docs/y.md, 'X', "X" in docs/y.md. */
function pointersIn(text: string, from: string): Pointer[] {
  const out: Pointer[] = [];
  const add = (file: string, heading: string | undefined) => {
    if (heading !== undefined) out.push({ from, file, heading });
  };
  for (const m of text.matchAll(/\bREADME,? "([^"\n]+)"/g)) add('README.md', m[1]);
  for (const m of text.matchAll(/"([^"\n]+)" in the README\b/g)) add('README.md', m[1]);
  for (const m of text.matchAll(/\b(docs\/[\w.-]+\.md),? (?:"([^"\n]+)"|'([^'\n]+)')/g))
    add(m[1] ?? '', m[2] ?? m[3]);
  for (const m of text.matchAll(/"([^"\n]+)" in (docs\/[\w.-]+\.md)/g)) add(m[2] ?? '', m[1]);
  return out;
}

const CODE = ['src', 'bin', 'migrations', 'scripts'].flatMap((dir) =>
  filesUnder(dir, (f) => /\.(?:ts|js|mjs|sql|sh)$/.test(f)),
);
const DOCS = ['README.md', ...filesUnder('docs', (f) => f.endsWith('.md'))];

describe('pointers to headings', () => {
  it('finds the pointers of pure text as written', () => {
    expect(pointersIn('see "Truncated days" in the README): x', 'a')).toEqual([
      { from: 'a', file: 'README.md', heading: 'Truncated days' },
    ]);
    expect(
      pointersIn(`follow README "Changing INSIGHTS_PII_KEY"; see docs/warehouse.md, 'Key collisions'`, 'b'),
    ).toEqual([
      { from: 'b', file: 'README.md', heading: 'Changing INSIGHTS_PII_KEY' },
      { from: 'b', file: 'docs/warehouse.md', heading: 'Key collisions' },
    ]);
    expect(
      anchors('# Changing INSIGHTS_PII_KEY\n```sh\n# not a heading\n```\n## Sources (sites)\n## A\n## A'),
    ).toEqual(new Set(['changing-insights_pii_key', 'sources-sites', 'a', 'a-1']));
  });

  it("every heading the tool's output and messages point to exists, as a heading of the file they name", () => {
    const pointers = CODE.flatMap((file) => pointersIn(read(file), file));
    // The ones every run, a refused key and the missing-upstream summary print: found, so the check is not empty.
    expect(pointers.map((p) => `${p.file}: ${p.heading}`)).toEqual(
      expect.arrayContaining([
        'README.md: Truncated days',
        'README.md: Snapshot',
        'README.md: Changing INSIGHTS_PII_KEY',
        'README.md: Exit codes',
        'docs/warehouse.md: Items no longer served',
      ]),
    );
    const missing = pointers.filter(
      (p) => !existsSync(path.join(ROOT, p.file)) || !headings(read(p.file)).includes(p.heading),
    );
    expect(missing).toEqual([]);
  });

  it('every relative link of the README and docs/ resolves to a file and, with #anchor, to a heading of it', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const doc of DOCS) {
      for (const m of prose(read(doc)).matchAll(/\]\(([^)\s]+)\)/g)) {
        const link = m[1] ?? '';
        if (/^[a-z]+:/i.test(link)) continue;
        checked++;
        const [target = '', anchor] = link.split('#');
        const file = target === '' ? doc : path.join(path.dirname(doc), target);
        if (!existsSync(path.join(ROOT, file))) broken.push(`${doc}: ${link} (no such file)`);
        else if (anchor !== undefined && !anchors(read(file)).has(anchor))
          broken.push(`${doc}: ${link} (no such heading)`);
      }
    }
    expect(checked).toBeGreaterThan(50);
    expect(broken).toEqual([]);
  });
});

describe('the README, for a newcomer', () => {
  const readme = read('README.md');

  it('is short, with a table of contents, the two commands near the top, and the three answers newcomers searched for', () => {
    const lines = readme.split('\n');
    const words = readme.split(/\s+/).filter(Boolean).length;
    expect(lines.length).toBeLessThan(250);
    expect(words).toBeLessThan(2_500);
    const first = lines.findIndex((l) => l.startsWith('npm install && npm run demo'));
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(40);
    expect(lines[first + 1]).toMatch(/^npm test\b/);
    expect(readme).toContain('[Get started](#get-started)');
    for (const heading of [
      'Add a second site (source)',
      'Rename or remove a source',
      'Re-load a day',
      'Truncated days',
    ])
      expect(headings(readme)).toContain(heading);
    expect(readme).toMatch(/\bsite\b/);
  });
});
