import type { ScrubCandidate } from './verified.js';

/**
 * What a verify costs in requests, as measured against the simulator (docs/operating.md, "The
 * scrub"): a request per day window whose day fits in one answer, and a quarter more for the
 * proofs of the server's reading asked between windows (one every 8 days settled) and the checks
 * of empty days; about four per source and resource per run for the run's first and last proofs.
 * A day above the server's cap is read in slices and costs more: the reserve of a second run (the
 * confirming pass) covers a few of them.
 */
export const VERIFY_COST = { perWindow: 1.25, perResourceRun: 4 } as const;

/** The runs a night's scrub may make: its verify and that verify's confirming pass. */
const RUNS_RESERVED = 2;

/**
 * The day windows the scrub verifies tonight, per source as many as the requests the sync left it
 * pay for, least recently verified first (never verified first of all), then oldest day first.
 * `left`: per source, requests left of the night's budget; a source not in it gets none.
 */
export function scrubSlice(
  candidates: readonly ScrubCandidate[],
  left: ReadonlyMap<string, number>,
): ScrubCandidate[] {
  const bySource = new Map<string, ScrubCandidate[]>();
  for (const c of candidates) bySource.set(c.source, [...(bySource.get(c.source) ?? []), c]);
  const picked: ScrubCandidate[] = [];
  for (const [source, of] of bySource) {
    const resources = new Set(of.map((c) => c.resource)).size;
    const reserve = RUNS_RESERVED * resources * VERIFY_COST.perResourceRun;
    const windows = Math.floor(((left.get(source) ?? 0) - reserve) / VERIFY_COST.perWindow);
    if (windows <= 0) continue;
    picked.push(...[...of].sort(leastRecentlyVerified).slice(0, windows));
  }
  return picked;
}

function leastRecentlyVerified(a: ScrubCandidate, b: ScrubCandidate): number {
  const at = (c: ScrubCandidate) => (c.lastVerifiedAt === null ? -Infinity : c.lastVerifiedAt.getTime());
  return (
    at(a) - at(b) ||
    (a.day < b.day ? -1 : a.day > b.day ? 1 : 0) ||
    (a.resource < b.resource ? -1 : a.resource > b.resource ? 1 : 0)
  );
}

/**
 * Nights until every window is verified once: `windows` per source, at the windows a night's
 * budget pays for after the sync's `syncRequests` (per source: the sources are read apart), less
 * the day's `resources` windows that leave the lookback each night and join them.
 */
export function scrubPeriodNights(
  windows: number,
  budget: number,
  syncRequests: number,
  resources: number,
): number | null {
  const perNight = Math.floor(
    (budget - syncRequests - RUNS_RESERVED * resources * VERIFY_COST.perResourceRun) / VERIFY_COST.perWindow,
  );
  // Each night a day leaves the lookback: its windows join the ones to verify.
  const gained = perNight - resources;
  return gained <= 0 ? null : Math.ceil(windows / gained);
}

/**
 * The most requests a run's last proof of a resource's reading asks (src/extract/day-plan.ts,
 * proveRun): after a stale verdict the reading must pass twice in a row, so three asks, each one
 * request when the server answers it (a retry or a limit stepped down adds its own).
 */
export const CLOSING_PROOF_ASKS = 3;

/** The requests a source's allowance keeps for the last proofs of `resources` resources. */
export function closingReserve(resources: number): number {
  return CLOSING_PROOF_ASKS * resources;
}

/**
 * Whether a new window of a source may start: only while what its runs have sent, with the
 * reserve for the last proofs that close them, is below what the night left it. A window that
 * started always finishes (a half-read window is never recorded verified), so a source sends at
 * most `left` plus the requests of the windows in flight when its allowance ran out.
 */
export function mayStartWindow(sent: number, left: number, reserve: number): boolean {
  return sent + reserve < left;
}
