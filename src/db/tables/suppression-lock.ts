import type { Generated } from 'kysely';

/**
 * The suppression list's lock (migration 0013): its one row is locked, never written
 * (src/privacy/suppression.ts).
 */
export interface SuppressionLockTable {
  id: Generated<boolean>;
}
