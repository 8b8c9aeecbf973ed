import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FaultKind } from './faults.js';
import { dropConnection, pause, serveFault } from './faults.js';
import type { ServingSettings } from './settings.js';
import type { StatsTracker } from './stats.js';

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface GuardDeps {
  settings: ServingSettings;
  stats: StatsTracker;
  pickFault: (settings: ServingSettings) => FaultKind | null;
  /** Aborts when the simulator stops, cutting latency waits and stalls short. */
  stopping: AbortSignal;
}

/**
 * Wraps a route handler in what every request goes through, in this order: latency, the API key
 * check, then maybe a fault. Auth comes before faults, so a 401 always means a bad key.
 */
export function createGuard(deps: GuardDeps): (handler: Handler) => Handler {
  const { settings, stats } = deps;
  return (handler) => async (request, reply) => {
    const clientGone = new AbortController();
    reply.raw.once('close', () => clientGone.abort());
    const signal = AbortSignal.any([deps.stopping, clientGone.signal]);

    if (settings.latencyMs > 0 && !(await pause(settings.latencyMs, signal))) return dropConnection(reply);
    // The spec's header carries the raw key; "Bearer <key>" is rejected like any wrong key.
    if (request.headers.authorization !== settings.apiKey) {
      return reply.code(401).send({
        error: 'unauthorized',
        message: 'missing or invalid API key: send it raw in the Authorization header',
      });
    }
    const fault = deps.pickFault(settings);
    if (fault) {
      stats.fault();
      if (await serveFault(fault, reply, settings, signal)) return reply;
    }
    return handler(request, reply);
  };
}
