/**
 * The eight endpoints of spec section 4 by a short name (the path after `/v1/`, with `:id` left
 * out). Options that act on one endpoint (forbidden, missing, emptyAnswers) are keyed by it.
 */
export const ENDPOINT_NAMES = [
  'abtesting',
  'abtesting/detail',
  'personalization',
  'personalization/detail',
  'feedback',
  'survey',
  'recordings',
  'heatmaps',
] as const;

export type EndpointName = (typeof ENDPOINT_NAMES)[number];

export function isEndpointName(value: unknown): value is EndpointName {
  return typeof value === 'string' && (ENDPOINT_NAMES as readonly string[]).includes(value);
}
