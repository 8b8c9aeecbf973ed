import type { Visitor } from '../schemas/visitor.js';
import type { CopyValue } from './copy-text.js';
import { dedupeByKey } from './dedupe.js';
import type { LoadTransaction } from './transaction.js';
import { type UpsertCounts, type UpsertSpec, upsertRows } from './upsert.js';

const spec: UpsertSpec<'visitors'> = {
  table: 'visitors',
  key: ['source_id', 'id'],
  columns: [
    'source_id',
    'id',
    'name',
    'company',
    'email',
    'ip',
    'user_agent',
    'landing_page',
    'ref_page',
    'created_at',
    'device',
    'browser',
    'os',
    'raw',
  ],
  compare: ['raw'],
};

export interface VisitorLoad extends UpsertCounts {
  conflicts: number;
}

/** Upserts the visitor objects embedded in feedback and survey items. */
export async function loadVisitors(
  trx: LoadTransaction,
  sourceId: string,
  visitors: readonly Visitor[],
): Promise<VisitorLoad> {
  const { items, conflicts } = dedupeByKey(visitors, (v) => v.id);
  const rows = items.map((v): CopyValue[] => [
    sourceId,
    v.id,
    v.name,
    v.company,
    v.email,
    v.ip,
    v.user_agent,
    v.landing_page,
    v.ref_page,
    v.created_at,
    v.device,
    v.browser,
    v.os,
    JSON.stringify(v),
  ]);
  return { ...(await upsertRows(trx, spec, rows)), conflicts };
}
