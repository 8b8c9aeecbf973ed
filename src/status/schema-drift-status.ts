import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import { schemaDriftRows } from '../ledger/read.js';

/**
 * What `status` shows of the inventory of fields the API sends that the spec does not describe
 * (schema_drift, kept up to date by each window's load: src/sync/schema-drift.ts).
 */
export interface SchemaDriftField {
  source: string;
  resource: string;
  /** Where the field sits in an item, e.g. x_extra or visitor.x_new. From the API: untrusted text. */
  field: string;
  firstSeenAt: string;
  lastSeenAt: string;
}

export async function schemaDriftStatus(db: Kysely<Database>): Promise<SchemaDriftField[]> {
  const rows = await schemaDriftRows(db);
  return rows.map((r) => ({
    source: r.source_id,
    resource: r.resource,
    field: r.field_path,
    firstSeenAt: r.first_seen_at.toISOString(),
    lastSeenAt: r.last_seen_at.toISOString(),
  }));
}
