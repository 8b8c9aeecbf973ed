import { scrubSlice } from '../ledger/scrub-plan.js';
import { type ScrubCandidate, scrubCandidates, windowKey } from '../ledger/verified.js';
import type { Logger } from '../log/logger.js';
import { addDays, type DayString } from '../time/days.js';
import type { RunResult } from './outcomes.js';
import { RequestAllowance } from './request-allowance.js';
import { runVerify, type VerifyDeps, type VerifyResult } from './verify.js';

/**
 * The schedule's night: the nightly sync first, then the scrub, which verifies the least recently
 * verified older days (src/sync/verify.ts) with the requests the sync left of each source's
 * nightly budget (INSIGHTS_SCRUB_REQUESTS_PER_NIGHT). Storage systems scrub so (ZFS, Ceph): read
 * everything again on a schedule, within a budget, and repair from the source of truth. The sync
 * never waits for the scrub: it runs whole first, and the scrub takes only what is left.
 *
 * What is left is a hard stop, not only the plan's estimate: the verify counts the requests it
 * sends to each source, and once a source's are spent (with a reserve for the last proofs of its
 * runs) it starts no new window of it. A window that started finishes: a window cut mid-read
 * could not be recorded verified, and its requests would be spent for nothing. So a source may
 * go past what was left by at most the requests of its windows in flight when it ran out (at most
 * twice INSIGHTS_CONCURRENCY windows). The windows held back keep their last_verified_at: the
 * next night takes them first.
 */
export interface NightDeps extends VerifyDeps {
  /** The nightly sync (runLocked of the job's request for the schedule). */
  sync: () => Promise<RunResult>;
  /** Requests per source a night, shared by the sync and the scrub; 0: no scrub. */
  budget: number;
  /** The configured sources. */
  sources: readonly string[];
  /** The days the sync reads every night (its lookback and today) are not the scrub's. */
  lookbackDays: number;
  now: () => Date;
  logger: Logger;
  /** Shutdown: a scrub not begun is not begun. */
  signal?: AbortSignal;
}

export interface NightResult {
  sync: RunResult;
  /** The windows the scrub chose, and what their verify found; none when nothing was left. */
  scrubbed: ScrubCandidate[];
  scrub?: VerifyResult;
  /** Per source, the requests the scrub's verify sent (every attempt), as its allowance counted them. */
  sent: Record<string, number>;
}

export async function runNight(deps: NightDeps): Promise<NightResult> {
  const sync = await deps.sync();
  if (deps.budget === 0 || deps.signal?.aborted === true) return { sync, scrubbed: [], sent: {} };
  const left = new Map(deps.sources.map((source) => [source, deps.budget - requestsOf(sync, source)]));
  const today = deps.now().toISOString().slice(0, 10);
  const before: DayString = addDays(today, -deps.lookbackDays);
  const scrubbed = scrubSlice(await scrubCandidates(deps.db, deps.sources, before), left);
  if (scrubbed.length === 0) {
    deps.logger.info(
      { left: Object.fromEntries(left) },
      'scrub: nothing to verify within what the sync left',
    );
    return { sync, scrubbed, sent: {} };
  }
  const days = scrubbed.map((c) => c.day).sort();
  const allowance = new RequestAllowance(left, resourcesPerSource(scrubbed));
  const scrub = await runVerify(deps, {
    from: days[0] ?? before,
    to: days[days.length - 1] ?? before,
    sources: [...new Set(scrubbed.map((c) => c.source))],
    only: new Set(scrubbed.map((c) => windowKey(c.source, c.resource, c.day))),
    allowance,
  });
  const sent = Object.fromEntries(deps.sources.map((s) => [s, allowance.sent(s)]));
  deps.logger.info(
    {
      windows: scrubbed.length,
      leftForBudget: scrub.held.size,
      requests: sent,
      runs: scrub.runs.map((r) => r.runId),
      found: totals(scrub),
    },
    'scrub: older days verified',
  );
  return { sync, scrubbed, scrub, sent };
}

/** Per source, the resources of the windows the scrub chose. */
export function resourcesPerSource(chosen: readonly ScrubCandidate[]): Map<string, number> {
  const of = new Map<string, Set<string>>();
  for (const c of chosen) of.set(c.source, (of.get(c.source) ?? new Set()).add(c.resource));
  return new Map([...of].map(([source, resources]) => [source, resources.size]));
}

/** The requests a run made to a source (every response, and every attempt that got none). */
export function requestsOf(run: RunResult, source: string): number {
  return Object.values(run.requests[source] ?? {}).reduce((n, c) => n + c, 0);
}

function totals(scrub: VerifyResult) {
  return scrub.days.reduce(
    (t, d) => ({
      lacked: t.lacked + d.lacked,
      changed: t.changed + d.changed,
      gone: t.gone + d.gone,
      moved: t.moved + d.moved,
    }),
    { lacked: 0, changed: 0, gone: 0, moved: 0 },
  );
}
