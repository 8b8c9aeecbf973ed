import type { Migration } from 'kysely';
import * as core from './0001-core.js';
import * as webhooks from './0002-webhooks.js';
import * as analystLayer from './0004-analyst-layer.js';
import * as privacy from './0005-privacy.js';

/**
 * Every migration, in order. A static list (not a folder scan) so the same code runs from
 * TypeScript sources and from a build.
 */
export const migrations: Record<string, Migration> = {
  '0001-core': core,
  '0002-webhooks': webhooks,
  '0004-analyst-layer': analystLayer,
  '0005-privacy': privacy,
};
