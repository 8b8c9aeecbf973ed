import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * What the production image installs is package.json's dependencies (and, where present, its
 * optional ones): each must be loaded by the code that image runs, or it is weight and attack
 * surface for nothing.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUNTIME_FOLDERS = ['src', 'jobs', 'migrations', 'bin'];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    // bin/insights-sync-dev.js runs the sources through tsx: for a checkout, never in the image.
    if (name === 'insights-sync-dev.js') return [];
    return /\.(?:ts|js|mjs|cjs)$/.test(name) ? [file] : [];
  });
}

/** The packages a source text names as a module: import/export from, import(), require(), a require's resolve(). */
function modulesNamed(text: string): Set<string> {
  const named = new Set<string>();
  const forms = [
    // import ... from 'x' / export ... from 'x', over several lines
    /(?:^|\n)\s*(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]/g,
    // import 'x'
    /(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g,
    // import('x'), require('x')
    /\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
    // require.resolve('x'), createRequire(...).resolve('x')
    /\b(?:require|createRequire\([^)]*\))\.resolve\s*\(\s*['"]([^'"]+)['"]/g,
  ];
  for (const form of forms)
    for (const match of text.matchAll(form)) {
      const specifier = match[1] ?? '';
      if (specifier.startsWith('.') || specifier.startsWith('/')) continue;
      const parts = specifier.split('/');
      named.add(parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? ''));
    }
  return named;
}

describe('runtime dependencies', () => {
  it('reads a module name from every form the code loads one by', () => {
    const text = [
      "import { a } from 'alpha';",
      "import 'beta/register';",
      "export * from '@scope/gamma/sub';",
      "const d = await import('delta');",
      "const e = require.resolve('epsilon');",
      "const z = createRequire(import.meta.url).resolve('zeta');",
      "import x from './local.js';",
      'const label = "rows from \'the warehouse\'";',
      "resolve('done');",
      "import fs from 'node:fs';",
    ].join('\n');
    expect([...modulesNamed(text)].sort()).toEqual([
      '@scope/gamma',
      'alpha',
      'beta',
      'delta',
      'epsilon',
      'node:fs',
      'zeta',
    ]);
  });

  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
    optionalDependencies?: Record<string, string>;
  };
  const declared = Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies });
  const loaded = new Set<string>();
  for (const folder of RUNTIME_FOLDERS)
    for (const file of sourceFiles(path.join(ROOT, folder)))
      for (const name of modulesNamed(readFileSync(file, 'utf8'))) loaded.add(name);

  it('are each loaded by the code the image runs', () => {
    expect(declared.length).toBeGreaterThan(5);
    expect(declared.filter((name) => !loaded.has(name))).toEqual([]);
  });

  it('hold every package that code loads: none of them is a dev dependency, which the image leaves out', () => {
    const packages = [...loaded].filter((name) => !name.startsWith('node:'));
    expect(packages.length).toBeGreaterThan(5);
    expect(packages.filter((name) => !declared.includes(name))).toEqual([]);
  });
});
