import { FAULT_KINDS, type FaultKind } from './faults.js';

/**
 * How the simulator serves its data. The spec leaves these behaviours open (section 4: bounds,
 * ordering, limits; section 7: errors), so each is a switch a test can flip at run time.
 */
export interface ServingSettings {
  apiKey: string;
  enddate: 'inclusive' | 'exclusive';
  order: 'oldest-first' | 'newest-first';
  cap: number;
  latencyMs: number;
  faultRate: number;
  faults: FaultKind[];
  retryAfter: 'seconds' | 'http-date';
  stallMs: number;
  malformedRate: number;
  extraFields: boolean;
}

export type SettingsPatch = Partial<Omit<ServingSettings, 'apiKey'>>;

export const DEFAULT_SETTINGS: ServingSettings = {
  apiKey: 'sim-key',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 1000,
  latencyMs: 0,
  faultRate: 0,
  faults: [...FAULT_KINDS],
  retryAfter: 'seconds',
  stallMs: 60_000,
  malformedRate: 0,
  extraFields: false,
};

/** Throws a RangeError naming the first bad setting. */
export function validateSettings(patch: Partial<ServingSettings>): void {
  const fail = (name: string, expected: string, value: unknown): never => {
    throw new RangeError(`simulator option ${name} must be ${expected}, got ${JSON.stringify(value)}`);
  };
  const oneOf = (name: keyof ServingSettings, allowed: readonly string[]): void => {
    const value = patch[name];
    if (value !== undefined && !allowed.includes(value as string))
      fail(name, `one of ${allowed.join(', ')}`, value);
  };
  const integer = (name: keyof ServingSettings, min: number): void => {
    const value = patch[name];
    if (value !== undefined && (!Number.isInteger(value) || (value as number) < min)) {
      fail(name, `an integer >= ${min}`, value);
    }
  };
  const share = (name: keyof ServingSettings): void => {
    const value = patch[name];
    if (value !== undefined && (typeof value !== 'number' || !(value >= 0 && value <= 1))) {
      fail(name, 'a number from 0 to 1', value);
    }
  };
  if (patch.apiKey !== undefined && (typeof patch.apiKey !== 'string' || patch.apiKey === '')) {
    fail('apiKey', 'a non-empty string', patch.apiKey);
  }
  oneOf('enddate', ['inclusive', 'exclusive']);
  oneOf('order', ['oldest-first', 'newest-first']);
  oneOf('retryAfter', ['seconds', 'http-date']);
  integer('cap', 1);
  integer('latencyMs', 0);
  integer('stallMs', 0);
  share('faultRate');
  share('malformedRate');
  if (patch.faults !== undefined) {
    const unknown = patch.faults.filter((kind) => !FAULT_KINDS.includes(kind));
    if (!Array.isArray(patch.faults) || unknown.length > 0)
      fail('faults', `a list of ${FAULT_KINDS.join(', ')}`, patch.faults);
  }
  if (patch.extraFields !== undefined && typeof patch.extraFields !== 'boolean') {
    fail('extraFields', 'a boolean', patch.extraFields);
  }
}

/** Copies only the serving settings out of a wider options object, dropping undefined values. */
export function pickSettings(
  options: Partial<Record<keyof ServingSettings, unknown>>,
): Partial<ServingSettings> {
  const picked: Partial<Record<keyof ServingSettings, unknown>> = {};
  for (const key of Object.keys(DEFAULT_SETTINGS) as Array<keyof ServingSettings>) {
    if (options[key] !== undefined) picked[key] = options[key];
  }
  return picked as Partial<ServingSettings>;
}
