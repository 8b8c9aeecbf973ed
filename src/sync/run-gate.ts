import type { ResourceShortage } from '../db/resource-shortage.js';
import { AuthError } from '../errors.js';
import type { Resource } from '../schemas/resources.js';
import {
  EndpointRefusals,
  everyEndpointForbidden,
  type SnapshotOutcome,
  type WindowOutcome,
} from './outcomes.js';

/**
 * What a run has learned stops its work: a rejected key (401) stops the source; an endpoint's
 * 403/404 stops that resource only; a database that cannot take writes (a full disk) and a
 * shutdown stop everything not started yet. Decisions only: the run logs what `settle` says is new.
 */
export class RunGate {
  /** The rejected key's line, per source. */
  readonly fatal = new Map<string, string>();
  readonly refusals = new EndpointRefusals();
  /** The first window the database refused for want of resources: every other window would fail too. */
  shortage: ResourceShortage | undefined;

  constructor(private readonly signal?: AbortSignal) {}

  /** Whether a window or snapshot of this source and resource is no longer worth running. */
  skipped(source: string, resource: Resource): boolean {
    return (
      this.shortage !== undefined ||
      this.fatal.has(source) ||
      this.refusals.has(source, resource) ||
      this.signal?.aborted === true
    );
  }

  /** Learns from one outcome; true when it is the first refusal of its endpoint (the time to say so). */
  settle(outcome: WindowOutcome | SnapshotOutcome): boolean {
    if (outcome.fatal && outcome.error) this.fatal.set(outcome.source, outcome.error);
    if ('shortage' in outcome && outcome.shortage !== undefined) this.shortage ??= outcome.shortage;
    if (!outcome.refused || !outcome.error) return false;
    return this.refusals.add(outcome.source, outcome.resource, outcome.refused, outcome.error);
  }

  /**
   * 403 from every endpoint asked: a key that may read nothing is a rejected key. Marks such
   * sources fatal (their refused outcomes too) and returns each with the line that says so.
   */
  rejectForbiddenEverywhere(
    sources: readonly { name: string; baseUrl: string }[],
    windows: readonly WindowOutcome[],
    snapshots: readonly SnapshotOutcome[],
  ): { source: string; error: string }[] {
    const rejected: { source: string; error: string }[] = [];
    for (const source of sources) {
      if (this.fatal.has(source.name) || !everyEndpointForbidden(source.name, windows, snapshots)) continue;
      const error = new AuthError(source.baseUrl, source.name, 403, ' on every endpoint').message;
      this.fatal.set(source.name, error);
      for (const o of [...windows, ...snapshots]) if (o.source === source.name && o.refused) o.fatal = true;
      rejected.push({ source: source.name, error });
    }
    return rejected;
  }

  /**
   * Windows and snapshots skipped because their source's key was rejected or their endpoint refused
   * did not load for a reason the operator must fix: they say why (and count as not run).
   */
  markNotAttempted(outcomes: readonly (WindowOutcome | SnapshotOutcome)[]): void {
    for (const o of outcomes) {
      if (o.status !== 'skipped') continue;
      const why = this.fatal.get(o.source) ?? this.refusals.reason(o.source, o.resource);
      if (why === undefined) continue;
      o.notAttempted = true;
      o.error = why;
    }
  }
}
