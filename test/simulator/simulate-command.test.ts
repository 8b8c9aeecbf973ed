import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerSimulate } from '../../src/cli/simulate.js';
import type { RawSimulateOptions } from '../../src/cli/simulate-options.js';
import { parseSimulateOptions, runSimulate } from '../../src/cli/simulate-run.js';
import { CliError } from '../../src/errors.js';

const DEFAULTS: RawSimulateOptions = {
  port: '4010',
  host: '127.0.0.1',
  seed: '1',
  apiKey: 'sim-key',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: '1000',
  latencyMs: '0',
  faultRate: '0',
  retryAfter: 'seconds',
  stallMs: '60000',
  malformedRate: '0',
};
const NOW = new Date('2024-05-20T15:00:00Z');

describe('insights-sync simulate: options', () => {
  it('defaults to the 30 days ending today (UTC) and the simulator defaults', () => {
    expect(parseSimulateOptions(DEFAULTS, NOW)).toEqual({
      port: 4010,
      host: '127.0.0.1',
      seed: 1,
      from: '2024-04-21',
      to: '2024-05-20',
      apiKey: 'sim-key',
      startdate: 'inclusive',
      enddate: 'inclusive',
      order: 'oldest-first',
      cap: 1000,
      caps: {},
      maxLimit: null,
      instants: 'refused',
      defaultLimit: null,
      dayOffsetMinutes: 0,
      dayZone: null,
      reuseIds: 0,
      latencyMs: 0,
      faultRate: 0,
      faults: ['429', '500', '503', 'reset', 'stall'],
      retryAfter: 'seconds',
      stallMs: 60000,
      malformedRate: 0,
      oddValueRate: 0,
      malformedVariants: false,
      extraFields: false,
      forbidden: [],
      missing: [],
      emptyAnswers: {},
    });
  });

  it('takes --days, or --from and --to, and every serving option', () => {
    expect(parseSimulateOptions({ ...DEFAULTS, days: '3' }, NOW)).toMatchObject({
      from: '2024-05-18',
      to: '2024-05-20',
    });
    expect(parseSimulateOptions({ ...DEFAULTS, from: '2024-01-01', to: '2024-01-31' }, NOW)).toMatchObject({
      from: '2024-01-01',
      to: '2024-01-31',
    });
    expect(
      parseSimulateOptions(
        {
          ...DEFAULTS,
          enddate: 'exclusive',
          order: 'newest-first',
          cap: '50',
          latencyMs: '5',
          faultRate: '0.25',
          faults: '429, reset',
          retryAfter: 'http-date',
          stallMs: '100',
          malformedRate: '0.1',
          extraFields: true,
        },
        NOW,
      ),
    ).toMatchObject({
      enddate: 'exclusive',
      order: 'newest-first',
      cap: 50,
      latencyMs: 5,
      faultRate: 0.25,
      faults: ['429', 'reset'],
      retryAfter: 'http-date',
      stallMs: 100,
      malformedRate: 0.1,
      extraFields: true,
    });
  });

  it('takes every reading of the spec gaps', () => {
    expect(
      parseSimulateOptions(
        {
          ...DEFAULTS,
          startdate: 'exclusive',
          order: 'random',
          caps: 'feedback=100, survey=50',
          capSurvey: '40',
          capRecordings: '7',
          maxLimit: '500',
          instants: 'honoured',
          defaultLimit: '50',
          dayOffsetMinutes: '-300',
          reuseIds: '0.5',
          oddValueRate: '0.2',
          malformedVariants: true,
          forbidden: 'abtesting/detail,heatmaps',
          missing: 'personalization',
          emptyAnswers: 'feedback=2,abtesting/detail=1',
        },
        NOW,
      ),
    ).toMatchObject({
      startdate: 'exclusive',
      order: 'random',
      caps: { feedback: 100, survey: 40, recordings: 7 },
      maxLimit: 500,
      instants: 'honoured',
      defaultLimit: 50,
      dayOffsetMinutes: -300,
      reuseIds: 0.5,
      oddValueRate: 0.2,
      malformedVariants: true,
      forbidden: ['abtesting/detail', 'heatmaps'],
      missing: ['personalization'],
      emptyAnswers: { feedback: 2, 'abtesting/detail': 1 },
    });
    expect(parseSimulateOptions({ ...DEFAULTS, dayOffsetMinutes: '720' }, NOW).dayOffsetMinutes).toBe(720);
    expect(parseSimulateOptions({ ...DEFAULTS, dayZone: 'America/New_York' }, NOW).dayZone).toBe(
      'America/New_York',
    );
  });

  it('parses negative offsets from the real command line', () => {
    const program = new Command('insights-sync').exitOverride();
    let seen: RawSimulateOptions | undefined;
    registerSimulate(program);
    const simulate = program.commands.find((command) => command.name() === 'simulate');
    simulate?.action((raw: RawSimulateOptions) => {
      seen = raw;
    });
    program.parse(['simulate', '--day-offset-minutes', '-300', '--caps', 'feedback=3'], { from: 'user' });
    expect(parseSimulateOptions(seen ?? DEFAULTS, NOW)).toMatchObject({
      dayOffsetMinutes: -300,
      caps: { feedback: 3 },
      startdate: 'inclusive',
    });
  });

  it.each([
    [{ port: '70000' }, '--port'],
    [{ port: 'http' }, '--port'],
    [{ seed: '-1' }, '--seed'],
    [{ days: '0' }, '--days'],
    [{ days: '3', from: '2024-01-01' }, '--days'],
    [{ from: '2024-02-30' }, '--from'],
    [{ from: '2024-06-01', to: '2024-05-01' }, '--from'],
    [{ to: 'today' }, '--to'],
    [{ apiKey: ' ' }, '--api-key'],
    [{ enddate: 'both' }, '--enddate'],
    [{ order: 'by-id' }, '--order'],
    [{ startdate: 'both' }, '--startdate'],
    [{ caps: 'heatmaps=3' }, '--caps'],
    [{ caps: 'feedback' }, '--caps'],
    [{ caps: 'feedback=0' }, '--caps'],
    [{ capFeedback: '0' }, '--cap-feedback'],
    [{ capRecordings: 'x' }, '--cap-recordings'],
    [{ maxLimit: '0' }, '--max-limit'],
    [{ instants: 'sometimes' }, '--instants'],
    [{ defaultLimit: '0' }, '--default-limit'],
    [{ dayOffsetMinutes: '-841' }, '--day-offset-minutes'],
    [{ dayOffsetMinutes: '721' }, '--day-offset-minutes'],
    [{ dayOffsetMinutes: '1.5' }, '--day-offset-minutes'],
    [{ dayZone: 'Mars/Olympus' }, '--day-zone'],
    [{ dayZone: 'Europe/Berlin', dayOffsetMinutes: '60' }, '--day-zone'],
    [{ reuseIds: '2' }, '--reuse-ids'],
    [{ oddValueRate: '-0.1' }, '--odd-value-rate'],
    [{ forbidden: 'feedbacks' }, '--forbidden'],
    [{ missing: ',' }, '--missing'],
    [{ emptyAnswers: 'survey=-1' }, '--empty-answers'],
    [{ emptyAnswers: 'nowhere=1' }, '--empty-answers'],
    [{ cap: '0' }, '--cap'],
    [{ latencyMs: '1.5' }, '--latency-ms'],
    [{ faultRate: '1.5' }, '--fault-rate'],
    [{ faults: '418' }, '--faults'],
    [{ retryAfter: 'minutes' }, '--retry-after'],
    [{ stallMs: 'long' }, '--stall-ms'],
    [{ malformedRate: 'some' }, '--malformed-rate'],
  ] as Array<[Partial<RawSimulateOptions>, string]>)(
    'rejects %o with a CliError naming %s',
    (patch, option) => {
      const parse = () => parseSimulateOptions({ ...DEFAULTS, ...patch }, NOW);
      expect(parse).toThrow(CliError);
      expect(parse).toThrow(option);
    },
  );

  it('describes every option in --help', () => {
    const program = new Command('insights-sync');
    registerSimulate(program);
    const help = program.commands.find((command) => command.name() === 'simulate')?.helpInformation() ?? '';
    for (const flag of [
      '--port',
      '--host',
      '--seed',
      '--days',
      '--from',
      '--to',
      '--api-key',
      '--enddate',
      '--order',
      '--cap',
      '--latency-ms',
      '--fault-rate',
      '--faults',
      '--retry-after',
      '--stall-ms',
      '--malformed-rate',
      '--extra-fields',
      '--startdate',
      '--caps',
      '--cap-feedback',
      '--cap-survey',
      '--cap-recordings',
      '--max-limit',
      '--instants',
      '--default-limit',
      '--day-offset-minutes',
      '--reuse-ids',
      '--odd-value-rate',
      '--malformed-variants',
      '--forbidden',
      '--missing',
      '--empty-answers',
    ]) {
      expect(help).toContain(flag);
    }
  });
});

describe('insights-sync simulate: running', () => {
  it('prints the URL and key, serves until asked to stop, then stops', async () => {
    const lines: string[] = [];
    let stop = (): void => undefined;
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const running = runSimulate(
      { ...parseSimulateOptions({ ...DEFAULTS, port: '0', days: '3' }, NOW) },
      () => stopped,
      (line) => lines.push(line),
    );
    await expect.poll(() => lines.length).toBeGreaterThan(0);
    const url = /listening at (\S+)/.exec(lines[0] ?? '')?.[1];
    expect(lines.join('\n')).toContain('sim-key');
    const response = await fetch(`${url}/v1/heatmaps`, { headers: { authorization: 'sim-key' } });
    expect(response.status).toBe(200);
    stop();
    await running;
    expect(lines.at(-1)).toBe('Simulator stopped.');
    await expect(fetch(`${url}/v1/heatmaps`)).rejects.toThrow();
  });

  it('reports a port in use as a CliError', async () => {
    const options = parseSimulateOptions({ ...DEFAULTS, port: '0', days: '1' }, NOW);
    let release = (): void => undefined;
    const lines: string[] = [];
    const first = runSimulate(
      options,
      () => new Promise<void>((resolve) => (release = resolve)),
      (line) => lines.push(line),
    );
    await expect.poll(() => lines.length).toBeGreaterThan(0);
    const port = Number(/:(\d+)$/.exec(/listening at (\S+)/.exec(lines[0] ?? '')?.[1] ?? '')?.[1]);
    await expect(
      runSimulate(
        { ...options, port },
        async () => undefined,
        () => undefined,
      ),
    ).rejects.toThrow(CliError);
    release();
    await first;
  });

  it('runs as a real process and exits cleanly on SIGTERM', async () => {
    const bin = fileURLToPath(new URL('../../bin/insights-sync-dev.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'simulate', '--days', '2', '--port', '0'], { stdio: 'pipe' });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await expect.poll(() => output, { timeout: 15_000 }).toMatch(/listening at (\S+)/);
    const url = /listening at (\S+)/.exec(output)?.[1];
    const response = await fetch(`${url}/v1/feedback?limit=1`, { headers: { authorization: 'sim-key' } });
    expect(response.status).toBe(200);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(output).toContain('Simulator stopped.');
  });
});
