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
    return /\.(?:ts|js|mjs|cjs)$/.test(name) ? [file] : [];
  });
}

/** The packages a source text names as a module: import/export from, import(), require(), a require's resolve(). */
function modulesNamed(text: string): Set<string> {
  const named = new Set<string>();
  const specifier =
    /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*|\.resolve\s*\(\s*)['"]([^'"./][^'"]*)['"]/g;
  for (const match of text.matchAll(specifier)) {
    const parts = (match[1] ?? '').split('/');
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

  it('are each loaded by the code the image runs', () => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    const loaded = new Set<string>();
    for (const folder of RUNTIME_FOLDERS)
      for (const file of sourceFiles(path.join(ROOT, folder)))
        for (const name of modulesNamed(readFileSync(file, 'utf8'))) loaded.add(name);
    const declared = Object.keys({ ...manifest.dependencies, ...manifest.optionalDependencies });
    expect(declared.length).toBeGreaterThan(5);
    expect(declared.filter((name) => !loaded.has(name))).toEqual([]);
  });
});
