/**
 * A command's own last line (an error, a summary) is written after every log line it logged
 * before: log lines to a pipe or a file are written as they are logged, not queued behind it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOGGER = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/log/logger.ts');

/** A process that logs a burst of JSON lines, then writes its own last line and exits. */
const SCRIPT = `
  const { createLogger } = await import(${JSON.stringify(LOGGER)});
  const logger = createLogger({ pretty: false });
  for (let i = 0; i < 2000; i += 1) logger.error({ i, pad: 'x'.repeat(200) }, 'could not record the failed window');
  process.stderr.write('insights-sync: the last line\\n');
  process.exitCode = 5;
`;

function run(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', () => resolve(stderr));
  });
}

describe('log lines and the last line', () => {
  it('the last line written is last on stderr, after every line logged before it', async () => {
    const lines = (await run()).trimEnd().split('\n');
    expect(lines).toHaveLength(2001);
    expect(lines.at(-1)).toBe('insights-sync: the last line');
  }, 30_000);
});
