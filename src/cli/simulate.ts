import type { Command } from 'commander';
import { Option } from 'commander';
import { FAULT_KINDS } from '../simulator/faults.js';
import { DAY_OFFSET_RANGE } from '../simulator/settings.js';

import { DEFAULT_DAYS, ENDPOINT_LIST, type RawSimulateOptions, VOLUME_OPTIONS } from './simulate-options.js';

export function registerSimulate(program: Command): void {
  const command = program
    .command('simulate')
    .description(
      'Run a fake Website Insights API with deterministic data, for demos, tests and benchmarks. ' +
        'Prints the base URL and the (fake) API key, then serves until Ctrl+C or SIGTERM.',
    );
  // In this order in --help: where it listens and what data, how it reads, what goes wrong, what it sends.
  for (const option of [
    ...serverAndDataOptions(),
    ...readingOptions(),
    ...faultOptions(),
    ...contentOptions(),
    ...volumeOptions(),
  ])
    command.addOption(option);
  command.action(async (raw: RawSimulateOptions) => {
    // The simulator (fastify and its data) loads only when this command runs.
    const { parseSimulateOptions, runSimulate } = await import('./simulate-run.js');
    await runSimulate(parseSimulateOptions(raw));
  });
}

/** Where the server listens, its seed, its days and its key. */
function serverAndDataOptions(): Option[] {
  return [
    new Option('--port <port>', 'TCP port to listen on; 0 picks a free one').default('4010', '4010'),
    new Option('--host <host>', 'address to listen on').default('127.0.0.1', '127.0.0.1'),
    new Option('--seed <n>', 'integer seed; the same seed serves the same data').default('1', '1'),
    new Option('--days <n>', `days of data ending today (UTC) [default: ${DEFAULT_DAYS}]`),
    new Option('--from <YYYY-MM-DD>', 'first day with data (instead of --days)'),
    new Option('--to <YYYY-MM-DD>', 'last day with data, included (default: today UTC)'),
    new Option('--api-key <key>', 'key clients must send raw in the Authorization header').default(
      'sim-key',
      'sim-key',
    ),
  ];
}

/** How the server reads a request: its bounds, order, caps, limit and day. */
function readingOptions(): Option[] {
  return [
    new Option(
      '--startdate <mode>',
      "'inclusive': startdate's day is served; 'exclusive': it is not",
    ).default('inclusive', 'inclusive'),
    new Option('--enddate <mode>', "'inclusive': enddate's day is served; 'exclusive': it is not").default(
      'inclusive',
      'inclusive',
    ),
    new Option(
      '--order <order>',
      "'oldest-first', 'newest-first' (by dt) or 'random' (a new shuffle on every request)",
    ).default('oldest-first', 'oldest-first'),
    new Option('--cap <n>', 'most items per response, whatever limit asks for').default('1000', '1000'),
    new Option(
      '--caps <list>',
      'per-resource caps overriding --cap, e.g. feedback=100,survey=50 (resources: feedback, survey, recordings)',
    ),
    new Option('--cap-feedback <n>', 'cap of feedback responses (overrides --caps)'),
    new Option('--cap-survey <n>', 'cap of survey responses (overrides --caps)'),
    new Option('--cap-recordings <n>', 'cap of recordings responses (overrides --caps)'),
    new Option('--max-limit <n>', 'answer 400 to a limit above this (default: no maximum)'),
    new Option(
      '--instants <mode>',
      "an ISO instant in startdate/enddate: 'refused' (400), 'ignored' (its date only) or 'honoured' (filtered to the millisecond)",
    ).default('refused', 'refused'),
    new Option(
      '--default-limit <n>',
      'items answered when a request sends no limit (the real service documents 50; default: the cap)',
    ),
    new Option(
      '--day-offset-minutes <n>',
      `the server's day starts at UTC midnight minus this (-300 = UTC-5), ${DAY_OFFSET_RANGE.min}..${DAY_OFFSET_RANGE.max}`,
    ).default('0', '0'),
    new Option(
      '--day-zone <zone>',
      "the server's days follow this time zone's clock, daylight saving included (Europe/Berlin: days of 23 and 25 hours); instead of --day-offset-minutes",
    ),
    new Option(
      '--reuse-ids <share>',
      "share of days (0..1) whose items reuse the previous day's ids",
    ).default('0', '0'),
  ];
}

/** What goes wrong: latency, failures, malformed items. */
function faultOptions(): Option[] {
  return [
    new Option('--latency-ms <ms>', 'delay added before every response').default('0', '0'),
    new Option('--fault-rate <share>', 'share of requests (0..1) that fail after auth').default('0', '0'),
    new Option('--faults <kinds>', `comma-separated kinds of fault: ${FAULT_KINDS.join(',')} [default: all]`),
    new Option('--retry-after <form>', "Retry-After on 429: 'seconds' or 'http-date'").default(
      'seconds',
      'seconds',
    ),
    new Option('--stall-ms <ms>', "how long a 'stall' fault hangs before answering").default(
      '60000',
      '60000',
    ),
    new Option(
      '--malformed-rate <share>',
      'share of items (0..1) served with a wrong type or missing field',
    ).default('0', '0'),
    new Option(
      '--odd-value-rate <share>',
      'share of items and heatmaps (0..1) with an integer above 2^31-1 or a NUL character',
    ).default('0', '0'),
    new Option(
      '--malformed-variants',
      "serve each test's first non-control variant with a string 'complete'",
    ),
  ];
}

/** What the server sends besides the spec: extra fields, refused or missing endpoints, empty answers. */
function contentOptions(): Option[] {
  return [
    new Option('--extra-fields', 'add fields the spec does not describe to every item'),
    new Option('--forbidden <endpoints>', `comma-separated endpoints answering 403: ${ENDPOINT_LIST}`),
    new Option('--missing <endpoints>', `comma-separated endpoints answering 404: ${ENDPOINT_LIST}`),
    new Option(
      '--empty-answers <list>',
      'transient 200 [] answers to serve first, per endpoint, e.g. feedback=2,heatmaps=1',
    ),
  ];
}

/** Items per day of each resource. */
function volumeOptions(): Option[] {
  return VOLUME_OPTIONS.map(([, flag, description]) => new Option(`${flag} <n>`, description));
}
