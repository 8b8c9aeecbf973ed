import type { Resource } from '../schemas/resource-names.js';

/**
 * The eight endpoints of spec section 4 by a short name (the path after `/v1/`, with `:id` left
 * out), per resource of the registry (src/schemas/resource-names.ts): a new resource is a compile
 * error here. Options that act on one endpoint (forbidden, missing, emptyAnswers) are keyed by it.
 */
const ENDPOINTS_OF = {
  abtesting: ['abtesting', 'abtesting/detail'],
  personalization: ['personalization', 'personalization/detail'],
  feedback: ['feedback'],
  survey: ['survey'],
  recordings: ['recordings'],
  heatmaps: ['heatmaps'],
} as const satisfies Record<Resource, readonly string[]>;

export type EndpointName = (typeof ENDPOINTS_OF)[Resource][number];

export const ENDPOINT_NAMES: readonly EndpointName[] = Object.values(ENDPOINTS_OF).flat();

/** The endpoints of a resource: its list, and a test's detail. */
export function endpointsOf(resource: Resource): readonly EndpointName[] {
  return ENDPOINTS_OF[resource];
}
