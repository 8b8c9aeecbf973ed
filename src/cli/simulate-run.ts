import { IANAZone } from 'luxon';
import { CliError, errorMessage } from '../errors.js';
import { printProse } from '../log/terminal-text.js';
import { WINDOWED_RESOURCES, type WindowedResource } from '../schemas/resource-names.js';
import { MAX_ITEMS_PER_DAY, type Volume } from '../simulator/day-plan.js';
import { ENDPOINT_NAMES, type EndpointName } from '../simulator/endpoint-names.js';
import { FAULT_KINDS, type FaultKind } from '../simulator/faults.js';
import { type SimulatorOptions, startSimulator } from '../simulator/server.js';
import { DAY_OFFSET_RANGE } from '../simulator/settings.js';
import { addDays, dayDiff as daysBetween, isDay, todayUtc } from '../time/days.js';
import {
  CAP_OPTIONS,
  DEFAULT_DAYS,
  ENDPOINT_LIST,
  type RawSimulateOptions,
  VOLUME_OPTIONS,
} from './simulate-options.js';

/** Turns the raw strings into simulator options; a bad value is one CliError naming its option. */
export function parseSimulateOptions(raw: RawSimulateOptions, now: Date = new Date()): SimulatorOptions {
  const { from, to } = parseRange(raw, now);
  return {
    port: integer('--port', raw.port, 0, 65_535),
    host: raw.host,
    seed: integer('--seed', raw.seed, 0, Number.MAX_SAFE_INTEGER),
    from,
    to,
    apiKey: nonEmpty('--api-key', raw.apiKey),
    startdate: choice('--startdate', raw.startdate ?? 'inclusive', ['inclusive', 'exclusive'] as const),
    enddate: choice('--enddate', raw.enddate, ['inclusive', 'exclusive'] as const),
    order: choice('--order', raw.order, ['oldest-first', 'newest-first', 'random'] as const),
    cap: integer('--cap', raw.cap, 1, 1_000_000),
    caps: capsOf(raw),
    maxLimit: raw.maxLimit === undefined ? null : integer('--max-limit', raw.maxLimit, 1, 1_000_000),
    instants: choice('--instants', raw.instants ?? 'refused', ['refused', 'ignored', 'honoured'] as const),
    defaultLimit:
      raw.defaultLimit === undefined ? null : integer('--default-limit', raw.defaultLimit, 1, 1_000_000),
    dayOffsetMinutes: signedInteger(
      '--day-offset-minutes',
      raw.dayOffsetMinutes ?? '0',
      DAY_OFFSET_RANGE.min,
      DAY_OFFSET_RANGE.max,
    ),
    dayZone: raw.dayZone === undefined ? null : dayZone(raw),
    reuseIds: share('--reuse-ids', raw.reuseIds ?? '0'),
    latencyMs: integer('--latency-ms', raw.latencyMs, 0, 600_000),
    faultRate: share('--fault-rate', raw.faultRate),
    faults: raw.faults === undefined ? [...FAULT_KINDS] : faultList(raw.faults),
    retryAfter: choice('--retry-after', raw.retryAfter, ['seconds', 'http-date'] as const),
    stallMs: integer('--stall-ms', raw.stallMs, 0, 3_600_000),
    malformedRate: share('--malformed-rate', raw.malformedRate),
    oddValueRate: share('--odd-value-rate', raw.oddValueRate ?? '0'),
    malformedVariants: raw.malformedVariants === true,
    extraFields: raw.extraFields === true,
    forbidden: raw.forbidden === undefined ? [] : endpointList('--forbidden', raw.forbidden),
    missing: raw.missing === undefined ? [] : endpointList('--missing', raw.missing),
    emptyAnswers:
      raw.emptyAnswers === undefined
        ? {}
        : keyedIntegers('--empty-answers', raw.emptyAnswers, ENDPOINT_NAMES, 0, 1_000_000),
    ...volumeOf(raw),
  };
}

/** Only the volume flags given; the simulator's defaults for the others. */
function volumeOf(raw: RawSimulateOptions): Pick<SimulatorOptions, 'volume'> {
  const volume: Partial<Volume> = {};
  for (const [key, option] of VOLUME_OPTIONS) {
    const value = raw[key];
    if (value !== undefined) volume[key] = integer(option, value, 0, MAX_ITEMS_PER_DAY);
  }
  return Object.keys(volume).length === 0 ? {} : { volume };
}

/** --caps, then each --cap-<resource> on top. */
function capsOf(raw: RawSimulateOptions): Partial<Record<WindowedResource, number>> {
  const caps =
    raw.caps === undefined ? {} : keyedIntegers('--caps', raw.caps, WINDOWED_RESOURCES, 1, 1_000_000);
  for (const [key, resource] of CAP_OPTIONS) {
    const value = raw[key];
    if (value !== undefined) caps[resource] = integer(`--cap-${resource}`, value, 1, 1_000_000);
  }
  return caps;
}

/** Starts the simulator, prints where it is, and serves until a signal asks it to stop. */
export async function runSimulate(
  options: SimulatorOptions,
  untilStopped: () => Promise<unknown> = waitForSignal,
  write: (line: string) => void = (line) => printProse(`${line}\n`),
): Promise<void> {
  const simulator = await startSimulator(options).catch((error: unknown) => {
    throw new CliError(
      `cannot listen on ${options.host}:${options.port}: ${errorMessage(error)}`,
      {},
      { cause: error },
    );
  });
  const { busyDay } = simulator.truth().meta;
  write(`Website Insights simulator listening at ${simulator.url}`);
  write(`API key: ${simulator.apiKey} (a fake key; send it raw: -H 'Authorization: ${simulator.apiKey}')`);
  write(
    `Data from ${options.from} to ${options.to}, seed ${options.seed}` +
      `${busyDay ? `, busy day ${busyDay}` : ''}. Stop with Ctrl+C.`,
  );
  write(`Readings: ${describeReadings(options)}.`);
  try {
    await untilStopped();
  } finally {
    await simulator.stop();
  }
  write('Simulator stopped.');
}

/** The readings of the spec's gaps being played, so a demo shows what a client faces. */
function describeReadings(options: SimulatorOptions): string {
  const parts = [
    `startdate ${options.startdate ?? 'inclusive'}`,
    `enddate ${options.enddate ?? 'inclusive'}`,
    `order ${options.order ?? 'oldest-first'}`,
    `cap ${options.cap ?? 1000}`,
  ];
  for (const [resource, cap] of Object.entries(options.caps ?? {})) parts.push(`${resource} cap ${cap}`);
  if (options.maxLimit) parts.push(`400 above limit ${options.maxLimit}`);
  if (options.instants && options.instants !== 'refused') parts.push(`instants ${options.instants}`);
  if (options.defaultLimit) parts.push(`limit ${options.defaultLimit} when none is sent`);
  if (options.dayOffsetMinutes) parts.push(`server day offset ${options.dayOffsetMinutes} min`);
  if (options.dayZone) parts.push(`server days of ${options.dayZone}`);
  if (options.reuseIds) parts.push(`ids reused on ${options.reuseIds} of days`);
  if (options.oddValueRate) parts.push(`odd values ${options.oddValueRate}`);
  if (options.malformedRate) parts.push(`malformed ${options.malformedRate}`);
  if (options.malformedVariants) parts.push('malformed variants');
  if (options.forbidden?.length) parts.push(`403 on ${options.forbidden.join(',')}`);
  if (options.missing?.length) parts.push(`404 on ${options.missing.join(',')}`);
  for (const [endpoint, count] of Object.entries(options.emptyAnswers ?? {})) {
    if (count) parts.push(`${count} empty answers on ${endpoint}`);
  }
  if (options.faultRate) parts.push(`faults ${options.faultRate}`);
  return parts.join(', ');
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

function parseRange(raw: RawSimulateOptions, now: Date): { from: string; to: string } {
  if (raw.days !== undefined && (raw.from !== undefined || raw.to !== undefined)) {
    throw new CliError('--days cannot be combined with --from or --to');
  }
  const to = raw.to === undefined ? todayUtc(now) : day('--to', raw.to);
  if (raw.from !== undefined) {
    const from = day('--from', raw.from);
    if (from > to) throw new CliError(`--from (${from}) must not be after --to (${to})`);
    if (daysBetween(from, to) >= 3660) throw new CliError('--from/--to may span at most 3660 days');
    return { from, to };
  }
  const days = raw.days === undefined ? DEFAULT_DAYS : integer('--days', raw.days, 1, 3660);
  return { from: addDays(to, -(days - 1)), to };
}

function integer(option: string, value: string, min: number, max: number): number {
  const parsed = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
    throw new CliError(`${option} must be an integer from ${min} to ${max}, got '${value}'`);
  }
  return parsed;
}

function signedInteger(option: string, value: string, min: number, max: number): number {
  const parsed = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
    throw new CliError(`${option} must be an integer from ${min} to ${max}, got '${value}'`);
  }
  return parsed;
}

function share(option: string, value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0 || parsed > 1) {
    throw new CliError(`${option} must be a number from 0 to 1, got '${value}'`);
  }
  return parsed;
}

function choice<T extends string>(option: string, value: string, allowed: readonly T[]): T {
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined)
    throw new CliError(`${option} must be one of ${allowed.join(', ')}, got '${value}'`);
  return found;
}

function day(option: string, value: string): string {
  if (!isDay(value)) throw new CliError(`${option} must be a date YYYY-MM-DD, got '${value}'`);
  return value;
}

function dayZone(raw: RawSimulateOptions): string {
  const zone = raw.dayZone ?? '';
  if (!IANAZone.isValidZone(zone))
    throw new CliError(`--day-zone must be a time zone name such as Europe/Berlin, got '${zone}'`);
  if ((raw.dayOffsetMinutes ?? '0') !== '0')
    throw new CliError('--day-zone and --day-offset-minutes are two ways to draw the server day: give one');
  return zone;
}

function nonEmpty(option: string, value: string): string {
  if (value.trim() === '') throw new CliError(`${option} must not be empty`);
  return value;
}

function faultList(value: string): FaultKind[] {
  const kinds = value
    .split(',')
    .map((kind) => kind.trim())
    .filter((kind) => kind !== '');
  const faults = kinds.map((kind) => FAULT_KINDS.find((known) => known === kind));
  if (kinds.length === 0 || faults.some((kind) => kind === undefined)) {
    throw new CliError(
      `--faults must be a comma-separated list of ${FAULT_KINDS.join(', ')}, got '${value}'`,
    );
  }
  return faults as FaultKind[];
}

function commaList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

function endpointList(option: string, value: string): EndpointName[] {
  const names = commaList(value);
  const endpoints = names.map((name) => ENDPOINT_NAMES.find((known) => known === name));
  if (names.length === 0 || endpoints.some((endpoint) => endpoint === undefined)) {
    throw new CliError(`${option} must be a comma-separated list of ${ENDPOINT_LIST}, got '${value}'`);
  }
  return endpoints as EndpointName[];
}

/** `name=n,name=n` with each name among `keys`. */
function keyedIntegers<K extends string>(
  option: string,
  value: string,
  keys: readonly K[],
  min: number,
  max: number,
): Partial<Record<K, number>> {
  const parsed: Partial<Record<K, number>> = {};
  const entries = commaList(value);
  const expected = `${option} must be a comma-separated list of name=n with names among ${keys.join(', ')}`;
  if (entries.length === 0) throw new CliError(`${expected}, got '${value}'`);
  for (const entry of entries) {
    const parts = entry.split('=').map((part) => part.trim());
    const [name = '', count = ''] = parts;
    const key = keys.find((known) => known === name);
    if (key === undefined || parts.length !== 2) {
      throw new CliError(`${expected}, got '${value}'`);
    }
    parsed[key] = integer(`${option} ${key}`, count, min, max);
  }
  return parsed;
}
