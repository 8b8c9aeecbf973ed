import { itemIdentity } from '../extract/item-identity.js';
import type { WindowedResource } from '../schemas/resource-names.js';

/**
 * Items of neighbouring days a run's windows of one source have stored already (run-window.ts,
 * storeNeighbours), by identity: a wide answer's items come along with many windows (quiet mode's
 * widest requests, cap checks, a busy day inside four days' requests), and each sent them to the
 * warehouse again, to be staged and found stored: a busy day of 1,500 items took ten windows'
 * merges. What one window stored, committed, later windows need not send: an item the same
 * (identity: its JSON text) is inserted only when missing, and it is not.
 *
 * Bounded: at most NEIGHBOURS_MOST identities a resource, the first ones stored; past them,
 * items are sent as before. A long-lived worker keeps one per run and source it had windows of
 * lately (RecentNeighbours).
 */
export class NeighboursStored {
  private readonly stored = new Map<WindowedResource, Set<string>>();

  /** Of `items` (a window's items of other days), those not stored by an earlier window, with their identities. */
  fresh(resource: WindowedResource, items: readonly unknown[]): { items: unknown[]; identities: string[] } {
    const stored = this.stored.get(resource);
    const fresh: unknown[] = [];
    const identities: string[] = [];
    for (const item of items) {
      const identity = itemIdentity(item);
      if (stored?.has(identity)) continue;
      fresh.push(item);
      identities.push(identity);
    }
    return { items: fresh, identities };
  }

  /** Once committed: the identities `fresh` gave, up to the bound. */
  remember(resource: WindowedResource, identities: readonly string[]): void {
    let stored = this.stored.get(resource);
    if (stored === undefined) {
      stored = new Set();
      this.stored.set(resource, stored);
    }
    for (const identity of identities) {
      if (stored.size >= NEIGHBOURS_MOST) return;
      stored.add(identity);
    }
  }
}

/**
 * A worker's NeighboursStored, one per run and source, for the RECENT pairs it had windows of
 * last: a long-lived worker serves many runs, and what it remembers stays bounded (RECENT x
 * resources x NEIGHBOURS_MOST identities, about 17 MB at most).
 */
export class RecentNeighbours {
  private readonly byKey = new Map<string, NeighboursStored>();

  of(runId: number, source: string): NeighboursStored {
    const key = `${runId}/${source}`;
    const found = this.byKey.get(key) ?? new NeighboursStored();
    // Most recently used last: the first is the one let go of.
    this.byKey.delete(key);
    this.byKey.set(key, found);
    if (this.byKey.size > RECENT) this.byKey.delete(this.byKey.keys().next().value as string);
    return found;
  }
}
const RECENT = 32;

/**
 * Identities kept a resource: about 90 bytes each, so 180 kB; a busy day of 1,500 items fits. A
 * worker keeps them for a few runs and sources (window-worker.ts), a run for each of its sources.
 */
export const NEIGHBOURS_MOST = 2_000;
