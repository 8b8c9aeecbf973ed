import type { Visitor } from '../schemas/visitor.js';

/**
 * Visitors (spec 2.6) come embedded in feedback items and survey answers, many times each, and
 * their attributes (landing_page, device, ...) change over time. A row holds the most recent
 * observation by the dt of the item that carried it (visitors.observed_at), whatever order the
 * windows commit in: a window loading an older day (a backfill, a slow concurrent window) never
 * replaces a newer copy. Two observations with the same dt: the larger JSON text (jsonb's own,
 * canonical rendering) wins, so the tie too is decided by content, not by timing.
 *
 * Webhook bodies carry no dt: their visitor only creates a row that does not exist yet
 * (observed_at null, below every API observation; src/load/webhook-items.ts).
 *
 * The API's visitors are merged on the server by the window's merge (migration 0041), read from
 * the window's staged items: per visitor the batch's most recent observation, written only where
 * it is more recent than the stored row, in key order (concurrent windows lock shared visitors in
 * one order and cannot deadlock). A visitor row only a webhook created, that the API's copy of
 * its item contradicts and no row names any more, is deleted there too: it would inflate counts.
 */

/** A visitor as its row of `visitors`: the one mapping of visitor fields to columns. */
export function visitorRow(sourceId: string, v: Visitor) {
  return {
    source_id: sourceId,
    id: v.id,
    name: v.name,
    company: v.company,
    email: v.email,
    ip: v.ip,
    user_agent: v.user_agent,
    landing_page: v.landing_page,
    ref_page: v.ref_page,
    created_at: v.created_at,
    device: v.device,
    browser: v.browser,
    os: v.os,
    raw: JSON.stringify(v),
  };
}

/** A visitor's columns in the visitors table, in the table's order: the API's loader and the webhooks' share them. */
export const VISITOR_COLUMNS = [
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
] as const satisfies readonly (keyof ReturnType<typeof visitorRow>)[];
