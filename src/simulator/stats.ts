/** Request counters; a benchmark reads maxInFlight to check a client kept to its concurrency. */
export interface SimulatorStats {
  requests: number;
  /** Requests received and not yet answered (or dropped). */
  inFlight: number;
  maxInFlight: number;
  faultsServed: number;
  /** Request count by path, without the query string. */
  byPath: Record<string, number>;
}

export interface StatsTracker {
  /** Counts a request; call the returned function once when its response ends. */
  start(path: string): () => void;
  fault(): void;
  snapshot(): SimulatorStats;
  /** Zeroes the counters; requests still in flight stay counted in inFlight. */
  reset(): void;
}

export function createStatsTracker(): StatsTracker {
  let requests = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let faultsServed = 0;
  let byPath = new Map<string, number>();
  return {
    start(path) {
      requests += 1;
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      byPath.set(path, (byPath.get(path) ?? 0) + 1);
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        inFlight -= 1;
      };
    },
    fault() {
      faultsServed += 1;
    },
    snapshot: () => ({ requests, inFlight, maxInFlight, faultsServed, byPath: Object.fromEntries(byPath) }),
    reset() {
      requests = 0;
      faultsServed = 0;
      maxInFlight = inFlight;
      byPath = new Map();
    },
  };
}
