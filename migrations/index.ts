import type { Migration } from 'kysely';
import * as core from './0001-core.js';
import * as webhooks from './0002-webhooks.js';

/**
 * Every migration, in order. A static list (not a folder scan) so the same code runs from
 * TypeScript sources and from a build.
 */
export const migrations: Record<string, Migration> = {
  '0001-core': core,
  '0002-webhooks': webhooks,
};
