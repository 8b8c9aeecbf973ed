import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProgress } from '../../src/cli/progress.js';
import { createLogger, terminalLines } from '../../src/log/logger.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import type { WindowOutcome } from '../../src/sync/outcomes.js';
import { addDays, todayUtc } from '../../src/time/days.js';
import { cliEnv, runCli } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';
import { windowOutcome } from '../helpers/outcomes.js';

const CANARY = 'CANARY-key-0f9c1d';

/** A 160-column terminal that keeps everything written to it. */
function fakeTerminal(): { stream: Writable & { isTTY: true; columns: number }; text: () => string } {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        text += chunk.toString();
        callback();
      },
    }),
    { isTTY: true as const, columns: 160 },
  );
  return { stream, text: () => text };
}
const TODAY = todayUtc(new Date());
const FROM = addDays(TODAY, -6);
const TO = addDays(TODAY, -1);

describe('logs', () => {
  let t: TestDatabase;
  let sim: Simulator;
  let dir: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    // Error-heavy: failing and stalling requests, malformed items.
    sim = await startSimulator({
      seed: 7,
      from: FROM,
      to: TO,
      apiKey: CANARY,
      faultRate: 0.3,
      malformedRate: 0.1,
      stallMs: 800,
    });
    dir = await mkdtemp(join(tmpdir(), 'insights-logs-'));
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('of an error-heavy run are JSON lines that never hold the API key, and name run, source, resource and day', async () => {
    // Two sources: one with the right key, one whose key the service rejects.
    const sources = join(dir, 'sources.json');
    await writeFile(
      sources,
      JSON.stringify({
        sources: [
          { name: 'good', base_url: sim.url, api_key_env: 'GOOD_KEY' },
          { name: 'wrong', base_url: sim.url, api_key: `${CANARY}-wrong` },
        ],
      }),
    );
    const result = await runCli(['backfill', '--from', FROM, '--to', TO], {
      ...cliEnv({
        DATABASE_URL: t.url,
        INSIGHTS_CONFIG: sources,
        GOOD_KEY: CANARY,
        LOG_LEVEL: 'trace',
        INSIGHTS_REQUEST_TIMEOUT_MS: '300',
        INSIGHTS_MAX_ATTEMPTS: '2',
        INSIGHTS_RETRY_BASE_MS: '0',
        INSIGHTS_RETRY_MAX_MS: '0',
      }),
    });
    expect(result.code).not.toBe(0); // the run met errors indeed
    expect(`${result.stdout}${result.stderr}`).not.toContain(CANARY);

    const lines = result.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.length).toBeGreaterThan(10);
    // The level by name and the time in ISO 8601 UTC, on every line (docs/configuration.md, "Log lines").
    expect(
      lines.filter(
        (l) =>
          !['trace', 'debug', 'info', 'warn', 'error', 'fatal'].includes(String(l.level)) ||
          !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(String(l.time)),
      ),
    ).toEqual([]);
    expect(lines.some((l) => l.level === 'warn')).toBe(true);
    const planned = lines.findIndex((l) => l.msg === 'run planned');
    const finished = lines.findIndex((l) => l.msg === 'run finished');
    expect(planned).toBeGreaterThanOrEqual(0);
    const during = lines.slice(planned, finished + 1);
    // Every line of the run carries its id; every line about a day names source, resource and day.
    expect(during.filter((l) => typeof l.runId !== 'number')).toEqual([]);
    const aboutADay = during.filter((l) => l.day !== undefined);
    expect(aboutADay.length).toBeGreaterThan(3);
    expect(aboutADay.filter((l) => !l.source || !l.resource)).toEqual([]);
    expect(during.some((l) => l.msg === 'window failed' || String(l.msg).includes('retrying'))).toBe(true);
    // Not a terminal: progress comes as plain log lines. The last one says what was done: no
    // day has both sources loaded, and the rejected source's windows ran (failed) or were skipped.
    const last = lines.filter((l) => l.msg === 'backfill progress').at(-1);
    // An error-heavy server answers a day otherwise from one ask to the next: days the run reads
    // again (a later answer held more of them) are more windows, each batch said in a line.
    const readAgain = during
      .filter((l) => String(l.msg).endsWith('reading them again'))
      .reduce((n, l) => n + Number(l.days), 0);
    expect(last).toMatchObject({ daysDone: 0, days: 6, windows: 36 + readAgain });
    expect(Number(last?.windowsDone)).toBeGreaterThanOrEqual(18);
    expect(Number(last?.windowsDone) + Number(last?.windowsSkipped)).toBe(36 + readAgain);
  });

  it('redact keys and tokens, even when a caller logs them by mistake', () => {
    const { logger, lines } = capturingLogger('trace');
    logger.info(
      {
        apiKey: CANARY,
        source: { name: 'main', apiKey: CANARY, webhookToken: CANARY },
        headers: { authorization: CANARY },
        token: CANARY,
      },
      'oops',
    );
    expect(JSON.stringify(lines)).not.toContain(CANARY);
    expect(lines[0]).toMatchObject({ apiKey: '[redacted]', source: { name: 'main' } });
  });
});

describe('backfill progress', () => {
  const outcome = (day: string, fetched: number): WindowOutcome =>
    windowOutcome({ source: 'main', day, fetched, inserted: fetched });

  it('on a terminal draws a bar with days done, items, rate and ETA', () => {
    const terminal = fakeTerminal();
    const stream = terminal.stream;
    let now = 0;
    const progress = createProgress({
      days: ['2026-05-01', '2026-05-02'],
      logger: capturingLogger().logger,
      tty: true,
      lines: terminalLines(stream),
      now: () => now,
    });
    progress.onPlan(4, 1);
    now = 2000;
    progress.onWindow(outcome('2026-05-01', 30), 1, 4);
    progress.onWindow({ ...outcome('2026-05-01', 10), resource: 'survey' }, 2, 4);
    progress.stop();
    expect(terminal.text()).toMatch(/backfill \|.*\| 1\/2 days \| 40 items \| 20 items\/s \| ETA/);
  });

  it('counts windows read again (days a proof reopened) as more work: the bar ends full, a day once', () => {
    const terminal = fakeTerminal();
    const progress = createProgress({
      days: ['2026-05-01', '2026-05-02'],
      logger: capturingLogger().logger,
      tty: true,
      lines: terminalLines(terminal.stream),
    });
    progress.onPlan(2, 1);
    progress.onWindow(outcome('2026-05-01', 30), 1, 2);
    progress.onWindow(outcome('2026-05-02', 10), 2, 2);
    // Both days reopened and read again: the run's total grows to 4, then a caller that
    // did not grow it reports a fifth window.
    progress.onWindow(outcome('2026-05-01', 31), 3, 4);
    progress.onWindow(outcome('2026-05-02', 12), 4, 4);
    progress.onWindow(outcome('2026-05-02', 12), 5, 4);
    progress.stop();
    const last = terminal.text().split('\r\u001b[2K').at(-1) ?? '';
    expect(last).toMatch(/^backfill \|█{30}\| 2\/2 days \| 95 items/);
  });

  it('of a verify, the bar and the log line say verify, not backfill', () => {
    const terminal = fakeTerminal();
    const onTerminal = createProgress({
      days: ['2026-05-01'],
      logger: capturingLogger().logger,
      tty: true,
      lines: terminalLines(terminal.stream),
      label: 'verify',
    });
    onTerminal.onPlan(1, 1);
    onTerminal.onWindow(outcome('2026-05-01', 3), 1, 1);
    onTerminal.stop();
    expect(terminal.text()).toMatch(/verify \|.*\| 1\/1 days/);
    expect(terminal.text()).not.toContain('backfill');
    const { logger, lines } = capturingLogger();
    const elsewhere = createProgress({ days: ['2026-05-01'], logger, tty: false, label: 'verify' });
    elsewhere.onPlan(1, 2);
    elsewhere.onWindow(outcome('2026-05-01', 3), 1, 1);
    expect(lines.map((line) => line.msg)).toEqual(['verify progress']);
  });

  it('on a terminal, a log line written during the bar clears it, stands on its own line, and the bar comes back below', () => {
    const terminal = fakeTerminal();
    const stream = terminal.stream;
    const lines = terminalLines(stream);
    const logger = createLogger({ level: 'info', pretty: false, destination: lines.stream });
    let now = 0;
    const progress = createProgress({ days: ['2026-05-01'], logger, tty: true, lines, now: () => now });
    progress.onPlan(2, 1);
    now = 1000;
    progress.onWindow(outcome('2026-05-01', 30), 1, 2);
    const before = terminal.text().length;
    logger.warn('a window was retried');
    const after = terminal.text().slice(before);
    progress.stop();
    // Cleared to the line's start, the log line whole on its own line, then the bar again.
    const CLEAR_LINE = '\r\u001b[2K';
    expect(after.startsWith(CLEAR_LINE)).toBe(true);
    expect(after.slice(CLEAR_LINE.length)).toMatch(
      /^\{[^\n]*"msg":"a window was retried"\}\n[\s\S]*backfill \|/,
    );
    // Once the bar has stopped, log lines are written as they are.
    const stopped = terminal.text().length;
    logger.warn('after the bar');
    expect(terminal.text().slice(stopped)).toMatch(/^\{[^\n]*"msg":"after the bar"\}\n$/);
  });

  it('elsewhere logs a line now and then, and always at the end', () => {
    const { logger, lines } = capturingLogger();
    let now = 0;
    const progress = createProgress({
      days: ['2026-05-01', '2026-05-02'],
      logger,
      tty: false,
      now: () => now,
      logEveryMs: 10_000,
    });
    progress.onPlan(2, 9);
    now = 1000;
    progress.onWindow(outcome('2026-05-01', 5), 1, 2);
    now = 4000;
    progress.onWindow(outcome('2026-05-02', 7), 2, 2);
    progress.stop();
    expect(lines).toEqual([
      expect.objectContaining({
        runId: 9,
        msg: 'backfill progress',
        daysDone: 2,
        days: 2,
        windowsDone: 2,
        windows: 2,
        windowsSkipped: 0,
        items: 12,
        itemsPerSecond: 3,
        etaSeconds: null,
      }),
    ]);
  });
});
