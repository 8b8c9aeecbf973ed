import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, cliEnv, collectOutput } from '../helpers/cli.js';
import { freePort } from '../helpers/free-port.js';

/**
 * An installable package: `npm pack` of the checkout, installed from the tarball into a temporary
 * prefix as docs/operating.md says (`npm install -g`), and its next command, `insights-sync
 * demo`, run from the installed binary: the simulator, the migrations, a backfill and a sync on
 * the embedded database, nothing from the checkout. One command: every other command of the guide runs
 * from the sources in test/docs/readme.test.ts and from a fresh build in compiled-bin.trials.ts;
 * what only the package can get wrong (a file left out of it, a module imported from a package
 * it does not install) is checked on the installed files. Slow (the build, the registry), so a
 * trial, not a test.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Where the install from the package is documented. */
const OPERATING = readFileSync(path.join(ROOT, 'docs', 'operating.md'), 'utf8');

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return collectOutput(child);
}

function npm(args: string[], cwd: string): Promise<CliResult> {
  // npm's own environment (its cache, the registry), none of the caller's warehouse settings.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(INSIGHTS_|DATABASE_URL$|npm_)/.test(key)),
  );
  const quoted = ['npm', ...args].map((arg) => (/^[\w./=@*-]+$/.test(arg) ? arg : `'${arg}'`)).join(' ');
  return sh(quoted, cwd, env);
}

/** Every .js file under a folder. */
function scripts(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.js'))
    .map((name) => path.join(dir, name));
}

/**
 * The packages the compiled code loads: static and dynamic imports and require calls of a bare
 * name (the lazy `createRequire(...)('node-cron')` included), by package name (`@scope/name`).
 */
function importedPackages(files: string[]): Set<string> {
  const names = new Set<string>();
  // import ... from 'x', import 'x', import('x'), require('x'), createRequire(...)('x').
  const specifier =
    /(?:^\s*(?:import|export)\b[^;'"`]*?\bfrom\s*|^\s*import\s*|\bimport\(\s*|\brequire\(\s*|\bcreateRequire\([^)]*\)\(\s*)['"]((?:@[\w.-]+\/)?[\w][\w.-]*)(?:\/[^'"]*)?['"]/gm;
  for (const file of files)
    for (const match of readFileSync(file, 'utf8').matchAll(specifier)) {
      const name = match[1] as string;
      if (builtinModules.includes(name)) continue;
      names.add(name);
    }
  return names;
}

describe('the packed tarball, installed', () => {
  let dir: string;
  let prefix: string;
  let installed: string;
  let install: CliResult;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'insights-package-'));
    // Run as root, the embedded PostgreSQL runs as the `postgres` user, who must reach its binaries.
    chmodSync(dir, 0o755);
    prefix = path.join(dir, 'prefix');
    installed = path.join(prefix, 'lib', 'node_modules', 'insights-sync');
    const pack = await npm(['pack', '--pack-destination', dir], ROOT);
    expect(pack.code, pack.stderr).toBe(0);
    // docs/operating.md's command, with a prefix of its own instead of the machine's global one. The
    // dependencies come from npm's cache where `npm ci` left them, without asking the registry
    // whether each is still the newest: the same files, and no round trip per package.
    const offline = ['--no-audit', '--no-fund', '--prefer-offline'];
    install = await npm(['install', '-g', '--prefix', prefix, './insights-sync-*.tgz', ...offline], dir);
    expect(install.code, install.stderr).toBe(0);
  }, 600_000);
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('holds the compiled CLI and nothing of the sources, and installs with no engine warning', () => {
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
    expect(tarball).toMatch(/^insights-sync-\d+\.\d+\.\d+\.tgz$/);
    expect(existsSync(path.join(installed, 'dist', 'src', 'cli', 'main.js'))).toBe(true);
    expect(existsSync(path.join(installed, 'dist', 'migrations', 'index.js'))).toBe(true);
    expect(existsSync(path.join(installed, 'src'))).toBe(false);
    expect(existsSync(path.join(installed, 'test'))).toBe(false);
    // tsx is a dev dependency: not installed with the package.
    expect(existsSync(path.join(installed, 'node_modules', 'tsx'))).toBe(false);
    expect(install.stderr).not.toContain('EBADENGINE');
  });

  it('installs every package its compiled code loads', () => {
    const loaded = importedPackages(scripts(path.join(installed, 'dist')));
    // The scan sees the imports: a few the CLI cannot run without.
    for (const name of ['kysely', 'pg', 'commander', 'pg-boss']) expect(loaded).toContain(name);
    const manifest = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as {
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    // An optional peer is the user's to install; the code that loads it says so when it is missing.
    const optional = (name: string) => manifest.peerDependenciesMeta?.[name]?.optional === true;
    const missing = [...loaded].filter(
      (name) => !optional(name) && !existsSync(path.join(installed, 'node_modules', name, 'package.json')),
    );
    expect(missing).toEqual([]);
  });

  it('`insights-sync demo` runs from the installed binary: the simulator, a backfill and a sync on the embedded database under ./.data', async () => {
    expect(OPERATING).toMatch(/^insights-sync demo\b/m);
    const work = path.join(dir, 'demo');
    mkdirSync(work, { recursive: true });
    // A port of its own: other runs on this machine may hold the default one.
    const env = cliEnv({
      INSIGHTS_EMBEDDED_PORT: String(await freePort()),
      PATH: `${path.join(prefix, 'bin')}:${process.env.PATH}`,
    });
    const result = await sh('insights-sync demo', work, env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Connect with');
    expect(existsSync(path.join(work, '.data', 'postgres', 'PG_VERSION'))).toBe(true);
  }, 300_000);
});
