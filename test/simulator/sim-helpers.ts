import { expect } from 'vitest';
import type * as z from 'zod';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/server.js';

/** Five days; the 3rd (2024-03-03) is the guaranteed empty day. */
export const SHORT_RANGE = { from: '2024-03-01', to: '2024-03-05' } as const;
/** Twelve days; the 10th (2024-03-10) is the busy day with 1,500 feedback items. */
export const LONG_RANGE = { from: '2024-03-01', to: '2024-03-12' } as const;

/** Runs `fn` against a simulator on a free port and always stops it. */
export async function withSimulator<T>(
  options: Partial<SimulatorOptions>,
  fn: (simulator: Simulator) => Promise<T>,
): Promise<T> {
  const simulator = await startSimulator({ ...SHORT_RANGE, ...options });
  try {
    return await fn(simulator);
  } finally {
    await simulator.stop();
  }
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** GET with the simulator's key unless the caller passes its own Authorization header. */
export async function get(simulator: Simulator, path: string, init: RequestInit = {}): Promise<JsonResponse> {
  const headers = new Headers(init.headers);
  if (!headers.has('authorization')) headers.set('authorization', simulator.apiKey);
  const response = await fetch(`${simulator.url}${path}`, { ...init, headers });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** GET that must succeed with a JSON array. */
export async function getArray(simulator: Simulator, path: string): Promise<Array<Record<string, unknown>>> {
  const { status, body } = await get(simulator, path);
  expect(status, `GET ${path}`).toBe(200);
  expect(Array.isArray(body), `GET ${path} returns an array`).toBe(true);
  return body as Array<Record<string, unknown>>;
}

/** Every item parses; on failure the message names the item and the zod issues. */
export function expectAllValid(schema: z.ZodType, items: readonly unknown[]): void {
  for (const item of items) {
    const parsed = schema.safeParse(item);
    if (!parsed.success) {
      expect.fail(`invalid item ${JSON.stringify(item)}: ${JSON.stringify(parsed.error.issues)}`);
    }
  }
}

/** The item's natural key, for comparing lists regardless of order. */
export function keyOf(item: Record<string, unknown>): string {
  if ('feedback_id' in item) return `${item.id}:${item.feedback_id}`;
  if ('question_id' in item) return `${item.id}:${item.question_id}`;
  return String(item.id);
}
