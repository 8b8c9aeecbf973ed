import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { ApiClient } from '../api/api-client.js';
import type { ExpectedAllocation } from '../config/source-config.js';
import type { Database } from '../db/database.js';
import type { EmptyReaskPolicy } from '../extract/empty-answers.js';
import type { LimitPolicy, ResourceKnowledge } from '../extract/fetch-day.js';
import type { Logger } from '../log/logger.js';
import type { PiiPolicy } from '../schemas/pii.js';
import { WINDOWED_RESOURCES, type WindowedResource } from '../schemas/resource-names.js';
import type { NeighboursStored } from './neighbours-stored.js';
import type { WindowMemory } from './window-memory.js';

/** Everything a run needs, passed in (no singletons): tests inject the clock and clients. */
export interface SyncContext {
  pool: pg.Pool;
  db: Kysely<Database>;
  logger: Logger;
  now: () => Date;
  limits: LimitPolicy;
  /** The share of invalid items a sound response may hold: a day fails only above it, on evidence (judgeInvalid). */
  maxInvalidShare: number;
  runId: number | null;
  /** The byte budget the windows in flight share (src/sync/window-memory.ts). */
  memory: WindowMemory;
  /** Aborted on shutdown: windows not yet started are skipped. */
  signal?: AbortSignal;
  /** How often an empty snapshot answer is asked again; default DEFAULT_EMPTY_REASK. */
  emptyReask?: EmptyReaskPolicy;
}

/** One source as a run sees it: its name and a client whose requests share the global bound. */
export interface SourceHandle {
  name: string;
  baseUrl: string;
  client: ApiClient;
  /**
   * What the run knows of the server, per windowed resource (bounds, server day, cap, limits),
   * seeded from server_readings and shared by the source's windows of that resource.
   */
  knowledge: Record<WindowedResource, ResourceKnowledge>;
  /** Applied to every item and reject before it is written; unset: personal data is kept. */
  pii?: PiiPolicy;
  /** The tests' declared splits, stored with every test snapshot; unset: none declared. */
  expectedAllocation?: ExpectedAllocation;
  /** Items of neighbouring days the run's windows of the source stored already; unset: none remembered. */
  neighbours?: NeighboursStored;
}

/** A source's knowledge of every windowed resource, each made by `of`. */
export function knowledgeOfEach(
  of: (resource: WindowedResource) => ResourceKnowledge,
): Record<WindowedResource, ResourceKnowledge> {
  // Built from the registry's list, so a new windowed resource has its knowledge too.
  return Object.fromEntries(WINDOWED_RESOURCES.map((resource) => [resource, of(resource)])) as Record<
    WindowedResource,
    ResourceKnowledge
  >;
}
