import { IANAZone } from 'luxon';
import { WINDOWED_RESOURCES } from '../schemas/resources.js';
import { ENDPOINT_NAMES } from './endpoint-names.js';
import { FAULT_KINDS } from './faults.js';
import { DAY_OFFSET_RANGE, type ServingSettings } from './settings.js';

type Name = keyof ServingSettings;

function fail(name: string, expected: string, value: unknown): never {
  throw new RangeError(`simulator option ${name} must be ${expected}, got ${JSON.stringify(value)}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Throws a RangeError naming the first bad setting; settings left undefined are not checked. */
export function validateSettings(patch: Partial<ServingSettings>): void {
  const oneOf = (name: Name, allowed: readonly string[]): void => {
    const value = patch[name];
    if (value !== undefined && !allowed.includes(value as string))
      fail(name, `one of ${allowed.join(', ')}`, value);
  };
  const integer = (name: Name, min: number, max = Number.MAX_SAFE_INTEGER): void => {
    const value = patch[name];
    if (
      value !== undefined &&
      (!Number.isInteger(value) || (value as number) < min || (value as number) > max)
    ) {
      fail(
        name,
        max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`,
        value,
      );
    }
  };
  const share = (name: Name): void => {
    const value = patch[name];
    if (value !== undefined && (typeof value !== 'number' || !(value >= 0 && value <= 1))) {
      fail(name, 'a number from 0 to 1', value);
    }
  };
  const boolean = (name: Name): void => {
    const value = patch[name];
    if (value !== undefined && typeof value !== 'boolean') fail(name, 'a boolean', value);
  };
  const list = (name: Name, allowed: readonly string[]): void => {
    const value = patch[name];
    if (value === undefined) return;
    if (!Array.isArray(value) || value.some((entry) => !allowed.includes(entry as string)))
      fail(name, `a list of ${allowed.join(', ')}`, value);
  };
  const counts = (name: Name, keys: readonly string[], min: number): void => {
    const value = patch[name];
    if (value === undefined) return;
    const valid =
      isRecord(value) &&
      Object.entries(value).every(
        ([key, count]) => keys.includes(key) && Number.isInteger(count) && (count as number) >= min,
      );
    if (!valid) fail(name, `an object mapping ${keys.join(', ')} to integers >= ${min}`, value);
  };

  if (patch.apiKey !== undefined && (typeof patch.apiKey !== 'string' || patch.apiKey === '')) {
    fail('apiKey', 'a non-empty string', patch.apiKey);
  }
  const keys = (name: Name): void => {
    const value = patch[name];
    if (value === undefined) return;
    if (!Array.isArray(value) || value.some((entry) => typeof entry !== 'string' || entry === ''))
      fail(name, 'a list of non-empty strings', value);
  };
  keys('apiKeys');
  keys('faultKeys');
  oneOf('startdate', ['inclusive', 'exclusive']);
  oneOf('enddate', ['inclusive', 'exclusive']);
  oneOf('instants', ['refused', 'ignored', 'honoured']);
  oneOf('order', ['oldest-first', 'newest-first', 'random']);
  oneOf('retryAfter', ['seconds', 'http-date']);
  integer('cap', 1);
  counts('caps', WINDOWED_RESOURCES, 1);
  if (patch.maxLimit !== null) integer('maxLimit', 1);
  if (patch.defaultLimit !== null) integer('defaultLimit', 1);
  integer('dayOffsetMinutes', DAY_OFFSET_RANGE.min, DAY_OFFSET_RANGE.max);
  const zone = patch.dayZone;
  if (zone !== undefined && zone !== null && (typeof zone !== 'string' || !IANAZone.isValidZone(zone)))
    fail('dayZone', 'a time zone name such as Europe/Berlin, or null', zone);
  if (typeof zone === 'string' && (patch.dayOffsetMinutes ?? 0) !== 0)
    fail('dayZone', 'alone: a server day follows a zone or a fixed offset, not both', zone);
  integer('latencyMs', 0);
  integer('stallMs', 0);
  share('faultRate');
  share('malformedRate');
  share('oddValueRate');
  share('reuseIds');
  share('snapshotEmptyRate');
  list('faults', FAULT_KINDS);
  list('forbidden', ENDPOINT_NAMES);
  list('missing', ENDPOINT_NAMES);
  counts('emptyAnswers', ENDPOINT_NAMES, 0);
  boolean('extraFields');
  boolean('malformedVariants');
}
