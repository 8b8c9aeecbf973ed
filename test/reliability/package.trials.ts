import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { type CliResult, cliEnv, collectOutput } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withStoredVisitor } from '../helpers/readme-visitor.js';

/**
 * An installable package: `npm pack` of the checkout, installed from the tarball into
 * a temporary prefix as the README says (`npm install -g`), and every command of the README that
 * ends by itself run from the installed binary: against a test database and the simulator in
 * place of the service, and `insights-sync demo` on its embedded database. Nothing here runs
 * from the checkout. Slow (the build, the registry), so a trial, not a test.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The README's sh commands, read as test/docs/readme.test.ts reads them. */
function readmeCommands(): { text: string; exports: string[] }[] {
  return [...README.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)]
    .filter((m) => m[1] === 'sh')
    .flatMap((m) => {
      const lines = (m[2] ?? '')
        .split('\n')
        .map((line) => line.replace(/\s+#.*$/, '').trim())
        .filter((line) => line !== '' && !line.startsWith('#'))
        .flatMap((line) => line.split(/\s+&&\s+/));
      const exports = lines.filter((line) => line.startsWith('export '));
      return lines.filter((line) => !line.startsWith('export ')).map((text) => ({ text, exports }));
    });
}

/** They run until stopped: the quick tests (test/cli/, test/webhooks/) run them from the sources. */
const LONG_RUNNING = [
  'node bin/insights-sync.js schedule',
  'node bin/insights-sync.js serve',
  'node bin/insights-sync.js demo --keep-running',
];
const PLACEHOLDERS = ['DATABASE_URL', 'INSIGHTS_API_URL', 'INSIGHTS_API_KEY'];

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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

describe('the packed tarball, installed', () => {
  let dir: string;
  let prefix: string;
  let bin: string;
  let install: CliResult;
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'insights-package-'));
    // Run as root, the embedded PostgreSQL runs as the `postgres` user, who must reach its binaries.
    chmodSync(dir, 0o755);
    prefix = path.join(dir, 'prefix');
    bin = path.join(prefix, 'bin', 'insights-sync');
    const pack = await npm(['pack', '--pack-destination', dir], ROOT);
    expect(pack.code, pack.stderr).toBe(0);
    // The README's command, with a prefix of its own instead of the machine's global one.
    install = await npm(
      ['install', '-g', '--prefix', prefix, './insights-sync-*.tgz', '--no-audit', '--no-fund'],
      dir,
    );
    expect(install.code, install.stderr).toBe(0);
    t = await createTestDatabase();
    sim = await startSimulator({
      seed: 5,
      from: '2025-12-20',
      to: new Date().toISOString().slice(0, 10),
      cap: 4000,
    });
  }, 600_000);
  afterAll(async () => {
    await sim?.stop();
    await t?.drop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('holds the compiled CLI and nothing of the sources, and installs with no engine warning', () => {
    const tarball = readdirSync(dir).find((name) => name.endsWith('.tgz'));
    expect(tarball).toMatch(/^insights-sync-\d+\.\d+\.\d+\.tgz$/);
    const installed = path.join(prefix, 'lib', 'node_modules', 'insights-sync');
    expect(existsSync(path.join(installed, 'dist', 'src', 'cli', 'main.js'))).toBe(true);
    expect(existsSync(path.join(installed, 'dist', 'migrations', 'index.js'))).toBe(true);
    expect(existsSync(path.join(installed, 'src'))).toBe(false);
    expect(existsSync(path.join(installed, 'test'))).toBe(false);
    // tsx is a dev dependency: not installed with the package.
    expect(existsSync(path.join(installed, 'node_modules', 'tsx'))).toBe(false);
    expect(install.stderr).not.toContain('EBADENGINE');
  });

  it('`insights-sync --help` runs from the installed binary', async () => {
    const result = await sh(`${bin} --help`, dir, cliEnv({}));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Usage: insights-sync');
  });

  it('every README command that ends by itself runs as written from the installed binary', async () => {
    const commands = readmeCommands().filter(
      (c) => c.text.startsWith('node bin/insights-sync.js') && !LONG_RUNNING.includes(c.text),
    );
    expect(commands.length).toBeGreaterThanOrEqual(8);
    // The source is named as in the README's report example (`--source shop`).
    const env = cliEnv({
      DATABASE_URL: t.url,
      INSIGHTS_API_URL: sim.url,
      INSIGHTS_API_KEY: sim.apiKey,
      INSIGHTS_SOURCE_NAME: 'shop',
    });
    // Files the commands write (reports) land in a folder of their own.
    const work = path.join(dir, 'work');
    mkdirSync(work, { recursive: true });
    for (const command of commands) {
      const exports = command.exports.filter(
        (line) => !PLACEHOLDERS.includes(/^export (\w+)/.exec(line)?.[1] ?? ''),
      );
      // The example visitor stands for one the warehouse holds (forget refuses an id no row holds).
      const text = await withStoredVisitor(command.text.replace(/^node bin\/insights-sync\.js/, bin), t.db);
      const result = await sh([...exports, text].join('\n'), work, env);
      expect(result.code, `${command.text}\n${result.stderr}`).toBe(0);
      if (command.text.includes('--json')) expect(JSON.parse(result.stdout)).toMatchObject({ healthy: true });
    }
    expect(existsSync(path.join(work, 'report.html'))).toBe(true);
  }, 300_000);

  it('`insights-sync demo`: the simulator, a backfill and a sync on the embedded database under ./.data', async () => {
    expect(readmeCommands().map((c) => c.text)).toContain('insights-sync demo');
    const work = path.join(dir, 'demo');
    mkdirSync(work, { recursive: true });
    // A port of its own: other runs on this machine may hold the default one.
    const env = cliEnv({
      INSIGHTS_EMBEDDED_PORT: String(await freePort()),
      PATH: `${path.dirname(bin)}:${process.env.PATH}`,
    });
    const result = await sh('insights-sync demo', work, env);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('Connect with');
    expect(existsSync(path.join(work, '.data', 'postgres', 'PG_VERSION'))).toBe(true);
  }, 300_000);
});
