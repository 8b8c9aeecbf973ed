import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EndpointName } from './endpoint-names.js';
import type { FaultKind } from './faults.js';
import { dropConnection, pause, serveFault } from './faults.js';
import type { ServingSettings } from './settings.js';
import type { StatsTracker } from './stats.js';

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface GuardDeps {
  settings: ServingSettings;
  stats: StatsTracker;
  pickFault: (settings: ServingSettings) => FaultKind | null;
  /** Whether this snapshot answer is played as a transient `200 []` (src/simulator/transient-empties.ts). */
  pickEmpty: (rate: number, endpoint: EndpointName, path: string) => boolean;
  /** Aborts when the simulator stops, cutting latency waits and stalls short. */
  stopping: AbortSignal;
}

/**
 * Wraps a route handler in what every request goes through, in this order: latency, the API key
 * check, the endpoint's access (forbidden, missing), maybe a fault, the handler, and last maybe a
 * transient empty answer. Auth comes first, so a 401 always means a bad key, on every endpoint.
 */
export function createGuard(deps: GuardDeps): (handler: Handler, endpoint?: EndpointName) => Handler {
  const { settings, stats } = deps;
  return (handler, endpoint) => async (request, reply) => {
    const clientGone = new AbortController();
    reply.raw.once('close', () => clientGone.abort());
    const signal = AbortSignal.any([deps.stopping, clientGone.signal]);

    if (settings.latencyMs > 0 && !(await pause(settings.latencyMs, signal))) return dropConnection(reply);
    // The spec's header carries the raw key; "Bearer <key>" is rejected like any wrong key.
    const key = request.headers.authorization;
    if (key === undefined || (key !== settings.apiKey && !settings.apiKeys.includes(key))) {
      return reply.code(401).send({
        error: 'unauthorized',
        message: 'missing or invalid API key: send it raw in the Authorization header',
      });
    }
    if (endpoint && settings.forbidden.includes(endpoint)) {
      return reply.code(403).send({ error: 'forbidden', message: `this API key may not read ${endpoint}` });
    }
    if (endpoint && settings.missing.includes(endpoint)) {
      // Like a server that never had this endpoint: the same answer as an unknown path.
      return reply
        .code(404)
        .send({ error: 'not_found', message: `no route ${request.method} ${request.url.split('?')[0]}` });
    }
    const stormed = settings.faultKeys.length === 0 || settings.faultKeys.includes(key);
    const fault = stormed ? deps.pickFault(settings) : null;
    if (fault) {
      stats.fault();
      if (await serveFault(fault, reply, settings, signal)) return reply;
    }
    const answer = await handler(request, reply);
    // Only an answer that would have been a 200 array is emptied, so errors (400, 404) still show.
    if (endpoint && Array.isArray(answer)) {
      const path = request.url.split('?')[0] ?? request.url;
      if (takeEmptyAnswer(settings, endpoint) || deps.pickEmpty(settings.snapshotEmptyRate, endpoint, path)) {
        stats.emptyServed();
        return [];
      }
    }
    return answer;
  };
}

/** Counts down the endpoint's remaining empty answers; true when this answer is one. */
function takeEmptyAnswer(settings: ServingSettings, endpoint: EndpointName): boolean {
  const remaining = settings.emptyAnswers[endpoint] ?? 0;
  if (remaining <= 0) return false;
  settings.emptyAnswers[endpoint] = remaining - 1;
  return true;
}
