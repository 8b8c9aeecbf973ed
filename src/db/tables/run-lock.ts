import type { Generated } from 'kysely';

/**
 * The run lock (migration 0010): locked, never written. One row whose id is always true; the run
 * in progress holds the table locked (src/db/run-lock.ts).
 */
export interface RunLockTable {
  id: Generated<boolean>;
}
