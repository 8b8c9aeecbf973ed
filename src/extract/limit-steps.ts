import type { LimitPolicy, ResourceKnowledge } from './plan-steps.js';

/**
 * The `limit` a day is asked with, and how it moves: up when an answer came back as long as it,
 * down when the server refused it (a 400 above its maximum). The run's memory of both lives in
 * ResourceKnowledge; these functions only read it, and say what to change.
 */

/** Each escalation multiplies the limit; few round trips reach any ceiling. */
const ESCALATION_FACTOR = 4;

/** The first limit for a day: the policy's, below a limit the server refused. */
export function startLimit(policy: LimitPolicy, knowledge: ResourceKnowledge): number {
  const first = Math.min(policy.limit, policy.maxLimit);
  const refused = knowledge.reading.limitRefused;
  if (refused === null || first < refused) return first;
  return Math.max(1, knowledge.limitAccepted ?? Math.floor(refused / 2));
}

/**
 * The first limit for a day earlier runs stored `itemsBefore` items of: raised as an answer that
 * long would raise it, and a tenth more for items that arrived since. A busy day is then not
 * first asked with a limit its answer fills, to be asked again with a larger one (and that cut
 * answer re-asked by the run's proofs, its cut canary). A hint only: what the answers show
 * decides, as for any day. Its neighbours keep the policy's limit: in quiet mode their widest
 * requests hold the busy day too, and one cut ends quiet mode sooner than whole ones would.
 */
export function hintedStartLimit(
  itemsBefore: number,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
): number {
  const wanted = itemsBefore + Math.ceil(itemsBefore / 10);
  let limit = startLimit(policy, knowledge);
  while (limit <= wanted) {
    const next = escalation(limit, policy, knowledge);
    // The run's one retry of a refused limit, and the search for the server's maximum, are the
    // escalation's to spend on an answer that fills a limit, not a hint's.
    if (next === undefined || next.retriesRefused || next.limit > ceiling(policy, knowledge)) break;
    limit = next.limit;
  }
  return limit;
}

/** Our ceiling, lowered by a server maximum: below a refused limit, at the largest one taken since. */
export function ceiling(policy: LimitPolicy, knowledge: ResourceKnowledge): number {
  const refused = knowledge.reading.limitRefused;
  if (refused === null) return policy.maxLimit;
  return Math.min(policy.maxLimit, knowledge.limitAccepted ?? refused - 1);
}

export interface Escalation {
  limit: number;
  /** This escalation is the run's one retry of a refused limit (the server may have raised its maximum). */
  retriesRefused: boolean;
}

/** The larger limit to ask an answer as long as `limit` again with, or undefined at the ceiling. */
export function escalation(
  limit: number,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
): Escalation | undefined {
  const top = ceiling(policy, knowledge);
  if (limit < top) return { limit: Math.min(limit * ESCALATION_FACTOR, top), retriesRefused: false };
  const refused = knowledge.reading.limitRefused;
  // Between the largest limit taken and the smallest refused lies the server's maximum: search the
  // gap (a few 400s, once a run) rather than cut answers the server would give whole.
  const between = refused === null ? limit : Math.min(policy.maxLimit, nextInGap(limit, refused));
  if (between > limit) return { limit: between, retriesRefused: false };
  // Once per run, try the refused limit again: the server may have raised its maximum.
  if (refused === null || limit >= policy.maxLimit || knowledge.refusedRetried) return undefined;
  return { limit: Math.min(refused, policy.maxLimit), retriesRefused: true };
}

/**
 * The limit to try between one taken and one refused. A server's maximum is most often a round
 * number, and our steps (1000, 4000, their halves) land on round ones: a round limit taken is
 * first tried with one more, which one 400 proves the maximum. Else the gap is halved.
 */
function nextInGap(taken: number, refused: number): number {
  if (taken + 1 >= refused) return taken;
  return taken % 5 === 0 ? taken + 1 : Math.floor((taken + refused) / 2);
}

/**
 * After a 400 on `limit`: the smaller limit to try. Halved until the server takes one; then
 * halfway between the largest it took and this one, so the steps close in on its maximum.
 */
export function stepDown(limit: number, knowledge: ResourceKnowledge): number {
  const accepted = knowledge.limitAccepted ?? 0;
  return accepted > 0 && accepted < limit ? Math.floor((accepted + limit) / 2) : Math.floor(limit / 2);
}
