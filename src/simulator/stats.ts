/** Request counters; a benchmark reads maxInFlight to check a client kept to its concurrency. */
export interface SimulatorStats {
  requests: number;
  /** Requests received and not yet answered (or dropped). */
  inFlight: number;
  maxInFlight: number;
  /**
   * The time requests spent in flight, summed over the requests answered, in milliseconds: over a
   * stretch of wall time, its growth divided by that time is the mean of requests in flight.
   */
  busyMs: number;
  faultsServed: number;
  /** Answers that would have been a 200 array and were played as a transient `200 []` instead. */
  emptiesServed: number;
  /** Request count by path, without the query string. */
  byPath: Record<string, number>;
  /** Per accepted API key (one per source): requests, and the most in flight at once. */
  byKey: Record<string, KeyStats>;
}

export interface KeyStats {
  requests: number;
  inFlight: number;
  maxInFlight: number;
  /** When each request was received, epoch milliseconds by the wall clock, in order: a rate can be checked. */
  startedAtMs: number[];
}

export interface StatsTracker {
  /**
   * Counts a request; call the returned function once when its response ends. `key`: the API key
   * it carries when the simulator accepts that key (never an unknown one: stats hold no junk).
   */
  start(path: string, key?: string): () => void;
  fault(): void;
  emptyServed(): void;
  snapshot(): SimulatorStats;
  /** Zeroes the counters; requests still in flight stay counted in inFlight. */
  reset(): void;
}

export function createStatsTracker(): StatsTracker {
  let requests = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let busyMs = 0;
  let faultsServed = 0;
  let emptiesServed = 0;
  let byPath = new Map<string, number>();
  const byKey = new Map<string, KeyStats>();
  return {
    start(path, key) {
      requests += 1;
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      byPath.set(path, (byPath.get(path) ?? 0) + 1);
      let perKey: KeyStats | undefined;
      if (key !== undefined) {
        perKey = byKey.get(key) ?? { requests: 0, inFlight: 0, maxInFlight: 0, startedAtMs: [] };
        byKey.set(key, perKey);
        perKey.requests += 1;
        // The wall clock, as PostgreSQL's clock_timestamp() reads it, whose request budgets these
        // are checked against: performance.timeOrigin + now() is the wall clock only at the
        // process's start, and drifts from it as the system clock is slewed (a long-lived test
        // worker, a CI run of many minutes, found each arrival "before" its budget's start).
        perKey.startedAtMs.push(Date.now());
        perKey.inFlight += 1;
        perKey.maxInFlight = Math.max(perKey.maxInFlight, perKey.inFlight);
      }
      let ended = false;
      const startedAt = performance.now();
      return () => {
        if (ended) return;
        ended = true;
        busyMs += performance.now() - startedAt;
        inFlight -= 1;
        if (perKey !== undefined) perKey.inFlight -= 1;
      };
    },
    fault() {
      faultsServed += 1;
    },
    emptyServed() {
      emptiesServed += 1;
    },
    snapshot: () => ({
      requests,
      inFlight,
      maxInFlight,
      busyMs,
      faultsServed,
      emptiesServed,
      byPath: Object.fromEntries(byPath),
      byKey: Object.fromEntries([...byKey].map(([k, v]) => [k, { ...v, startedAtMs: [...v.startedAtMs] }])),
    }),
    reset() {
      requests = 0;
      busyMs = 0;
      faultsServed = 0;
      emptiesServed = 0;
      maxInFlight = inFlight;
      byPath = new Map();
      for (const perKey of byKey.values()) {
        perKey.requests = 0;
        perKey.maxInFlight = perKey.inFlight;
        perKey.startedAtMs = [];
      }
    },
  };
}

/**
 * The most requests started within any `windowMs` of each other (a sliding window, closed at
 * both ends): for a budget of r per second, `mostStartsWithin(starts, 1000)` stays at most ceil(r)
 * only if no r + 1 starts ever fall within one second.
 */
export function mostStartsWithin(startedAtMs: readonly number[], windowMs: number): number {
  const starts = [...startedAtMs].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < starts.length; last++) {
    while ((starts[last] as number) - (starts[first] as number) > windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}
