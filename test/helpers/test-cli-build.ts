import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { transform } from 'esbuild';

/**
 * The CLI the tests start as a process, transpiled once per test run from the current sources.
 *
 * bin/insights-sync-dev.js runs the sources through tsx, which loads its loader and transforms the
 * module graph again in every process: about 1.5 s of CPU more than the same command from
 * JavaScript, paid by each of the suite's hundreds of CLI processes on a 2-core machine. Here
 * esbuild (what tsx itself transforms with) writes each file once, with the same layout, so the
 * processes run exactly the current code without paying for it each time. Never dist/: that is the
 * last `npm run build`, possibly older than the sources under test.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Inside the repository, so that the build resolves node_modules and package.json as src does. */
const BUILDS = path.join(ROOT, 'test-output', 'cli');
const SOURCE_DIRS = ['src', 'migrations', 'jobs'];
/** Test runs never last this long: older builds are from runs killed before their teardown. */
const LEFTOVER_AGE_MS = 60 * 60 * 1000;

export interface TestCliBuild {
  /** The entry to start with `node`: the launcher of bin/, then the transpiled src/cli/main.js. */
  bin: string;
  remove(): Promise<void>;
}

export async function buildTestCli(runTag: string): Promise<TestCliBuild> {
  await removeLeftovers();
  const dir = path.join(BUILDS, runTag);
  await rm(dir, { recursive: true, force: true });
  for (const sourceDir of SOURCE_DIRS)
    await transpileTree(path.join(ROOT, sourceDir), path.join(dir, sourceDir));
  const bin = path.join(dir, 'bin.js');
  const launcher = pathToFileURL(path.join(ROOT, 'bin', 'launch.js')).href;
  await writeFile(
    bin,
    [
      `import { launch } from ${JSON.stringify(launcher)};`,
      `await launch(() => import(${JSON.stringify(pathToFileURL(path.join(dir, 'src/cli/main.js')).href)}));`,
      '',
    ].join('\n'),
  );
  return { bin, remove: () => rm(dir, { recursive: true, force: true }) };
}

async function transpileTree(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name);
    if (entry.isDirectory()) await transpileTree(source, path.join(to, entry.name));
    else if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const { code } = await transform(await readFile(source, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: 'node22',
        // As tsconfig.json has it (ES2022 target: class fields are defined, not assigned).
        tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } },
        sourcefile: source,
      });
      await writeFile(path.join(to, entry.name.replace(/\.ts$/, '.js')), code);
    }
  }
}

async function removeLeftovers(): Promise<void> {
  for (const entry of await readdir(BUILDS).catch(() => [])) {
    const dir = path.join(BUILDS, entry);
    const info = await stat(dir).catch(() => undefined);
    if (info !== undefined && Date.now() - info.mtimeMs > LEFTOVER_AGE_MS)
      await rm(dir, { recursive: true, force: true });
  }
}
