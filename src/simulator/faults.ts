import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply } from 'fastify';
import { createRandom, hashSeed } from './random.js';

/** What can go wrong with a request, as a client of a real service would meet it. */
export const FAULT_KINDS = ['429', '500', '503', 'reset', 'stall'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultSettings {
  faultRate: number;
  faults: readonly FaultKind[];
  retryAfter: 'seconds' | 'http-date';
  stallMs: number;
}

/**
 * Draws whether a request fails, and how. Its own stream, so faults never shift the data; the
 * sequence of faults is the same for the same seed and the same order of requests.
 */
export function createFaultPicker(seed: number): (settings: FaultSettings) => FaultKind | null {
  const rng = createRandom(hashSeed(seed, 'faults'));
  return (settings) => {
    if (settings.faultRate <= 0 || settings.faults.length === 0) return null;
    return rng.next() < settings.faultRate ? rng.pick(settings.faults) : null;
  };
}

/** Retry-After in either form RFC 9110 allows; the date is 2 s ahead because it has 1 s resolution. */
function retryAfterValue(form: FaultSettings['retryAfter'], now: number = Date.now()): string {
  return form === 'seconds' ? '1' : new Date(now + 2000).toUTCString();
}

/** Waits, or resolves false at once when the signal aborts (server stopping, client gone). */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/** Ends a request without an answer: the client sees the connection drop. */
export function dropConnection(reply: FastifyReply): FastifyReply {
  if (!reply.sent) reply.hijack();
  reply.raw.destroy();
  return reply;
}

/**
 * Serves the fault. Returns true when the request is finished; a stall only delays it, so the
 * normal answer follows (unless the wait was cut short).
 */
export async function serveFault(
  kind: FaultKind,
  reply: FastifyReply,
  settings: FaultSettings,
  signal: AbortSignal,
): Promise<boolean> {
  switch (kind) {
    case '429':
      await reply
        .code(429)
        .header('retry-after', retryAfterValue(settings.retryAfter))
        .send({ error: 'rate_limited', message: 'too many requests; retry later' });
      return true;
    case '500':
      await reply.code(500).send({ error: 'internal_error', message: 'simulated internal server error' });
      return true;
    case '503':
      await reply.code(503).send({ error: 'unavailable', message: 'simulated maintenance; try again' });
      return true;
    case 'reset':
      resetMidBody(reply);
      return true;
    case 'stall':
      if (await pause(settings.stallMs, signal)) return false;
      dropConnection(reply);
      return true;
  }
}

/** Headers and the start of a JSON array go out, then the socket is destroyed. */
function resetMidBody(reply: FastifyReply): void {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
  // The short delay lets the partial body reach the client before the connection dies.
  raw.write('[{"id":1,"partial":', () => setTimeout(() => raw.destroy(), 5));
}
