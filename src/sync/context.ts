import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { ApiClient } from '../api/api-client.js';
import type { Database } from '../db/database.js';
import type { LimitPolicy, ServerCap } from '../extract/fetch-day.js';
import type { Logger } from '../log/logger.js';
import type { PiiPolicy } from '../privacy/pii.js';

/** Everything a run needs, passed in (no singletons): tests inject the clock and clients. */
export interface SyncContext {
  pool: pg.Pool;
  db: Kysely<Database>;
  logger: Logger;
  now: () => Date;
  limits: LimitPolicy;
  /** A day whose share of invalid items is above this fails instead of loading. */
  maxInvalidShare: number;
  runId: number | null;
  /** Aborted on shutdown: windows not yet started are skipped. */
  signal?: AbortSignal;
}

/** One source as a run sees it: its name and a client whose requests share the global bound. */
export interface SourceHandle {
  name: string;
  baseUrl: string;
  client: ApiClient;
  /** The server's cap on items per response, once a window has proved one. */
  serverCap: ServerCap;
  /** Applied to every item and reject before it is written; unset: personal data is kept. */
  pii?: PiiPolicy;
}
