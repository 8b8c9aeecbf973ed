/**
 * The launcher (bin/launch.js, shared by the installed bin and the dev one) refuses a Node.js
 * older than package.json's engines before anything else loads, in one line and exit 2 (a
 * configuration error, README "Exit codes").
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MIN_NODE, nodeVersionProblem } from '../../bin/launch.js';

const DEV_BIN = fileURLToPath(new URL('../../bin/insights-sync-dev.js', import.meta.url));

/** Runs the dev bin under this Node, but with process.version reading `version`. */
function runAs(version: string, ...args: string[]) {
  const preload = `data:text/javascript,Object.defineProperty(process,'version',{value:${JSON.stringify(version)}})`;
  return spawnSync(process.execPath, ['--import', preload, DEV_BIN, ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });
}

describe('the oldest Node.js the CLI runs on', () => {
  it("is package.json's engines.node", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(pkg.engines.node).toBe(`>=${MIN_NODE.join('.')}`);
  });

  it('refuses every release before 22.12, naming the version found and what to install', () => {
    for (const version of ['v20.19.0', 'v20.20.2', 'v18.20.8', 'v22.11.0', 'v21.7.3', 'v16.0.0'])
      expect(nodeVersionProblem(version)).toBe(
        `insights-sync: needs Node.js 22.12 or later, and this is Node.js ${version.slice(1)}: install Node.js 24 (the active LTS) from nodejs.org or your package manager`,
      );
  });

  it('accepts 22.12 and every later release', () => {
    for (const version of ['v22.12.0', 'v22.23.3', 'v23.0.0', 'v24.0.0', 'v24.21.0', 'v26.1.0'])
      expect(nodeVersionProblem(version)).toBeUndefined();
  });

  it('a CLI started on Node.js 20 prints that one line and exits 2, before loading anything else', () => {
    const result = runAs('v20.19.0', 'status');
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`${nodeVersionProblem('v20.19.0')}\n`);
  });

  it('the same CLI on a supported Node.js runs the command', () => {
    const result = runAs('v22.12.0', '--version');
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
