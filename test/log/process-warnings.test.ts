import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logProcessWarnings } from '../../src/log/process-warnings.js';
import { captureLogger } from '../api/fixture-server.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

describe('process warnings', () => {
  it('are log lines of the command, not lines of their own on stderr', () => {
    const process = new EventEmitter();
    const printed: string[] = [];
    // What Node does without a listener of ours: prints `(node:123) Warning: ...` to stderr.
    process.on('warning', (w: Error) => printed.push(`(node:1) ${w.name}: ${w.message}`));
    const { lines, logger } = captureLogger();
    logProcessWarnings(logger, process);
    const warning = Object.assign(new Error('Possible EventTarget memory leak detected'), {
      name: 'MaxListenersExceededWarning',
    });
    process.emit('warning', warning);
    const deprecation = Object.assign(new Error('Buffer() is deprecated'), {
      name: 'DeprecationWarning',
      code: 'DEP0005',
    });
    process.emit('warning', deprecation);

    expect(printed).toEqual([]);
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      {
        level: 'warn',
        warning: 'MaxListenersExceededWarning',
        msg: 'Possible EventTarget memory leak detected',
      },
      { level: 'warn', warning: 'DeprecationWarning', code: 'DEP0005', msg: 'Buffer() is deprecated' },
    ]);
  });
});

describe('a process warning in a command with JSON logs', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('is a JSON log line: every line on stderr is one', async () => {
    // Emits a warning as soon as the command has a listener of its own for warnings (Node's
    // printer is named onWarning), the way a leak or a deprecation would halfway through a run.
    const probe = `process.on('newListener', (event, listener) => { if (event === 'warning' && listener.name !== 'onWarning') setImmediate(() => process.emitWarning('probe: a warning in the middle of a command', 'ProbeWarning')); });`;
    const result = await runCli(
      ['status', '--json'],
      cliEnv({
        DATABASE_URL: t.url,
        LOG_FORMAT: 'json',
        NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(probe)}`,
      }),
    );
    const lines = result.stderr.split('\n').filter((line) => line !== '');
    const logged = lines.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return line;
      }
    });
    expect(logged.filter((line) => typeof line === 'string')).toEqual([]);
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        warning: 'ProbeWarning',
        msg: 'probe: a warning in the middle of a command',
      }),
    );
  });
});
