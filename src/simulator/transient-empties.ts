import { SNAPSHOT_RESOURCES } from '../schemas/resource-names.js';
import { type EndpointName, endpointsOf } from './endpoint-names.js';
import { unitHash } from './random.js';

/** The snapshot endpoints: lists and details whose `200 []` a client could mistake for the truth. */
export const SNAPSHOT_ENDPOINTS: readonly EndpointName[] = SNAPSHOT_RESOURCES.flatMap(endpointsOf);

/**
 * Draws whether a snapshot answer is played as a transient `200 []`. The coin is a hash of the
 * seed, the request path and how many times that path was asked before, not a shared stream: the
 * same answers come back empty whatever order concurrent requests arrive in, so a test over a
 * seed sees the same empties on every run of the suite.
 */
export function createEmptyPicker(
  seed: number,
): (rate: number, endpoint: EndpointName, path: string) => boolean {
  const asked = new Map<string, number>();
  return (rate, endpoint, path) => {
    if (rate <= 0 || !SNAPSHOT_ENDPOINTS.includes(endpoint)) return false;
    const n = asked.get(path) ?? 0;
    asked.set(path, n + 1);
    return unitHash(seed, 'transient-empty', path, n) < rate;
  };
}
