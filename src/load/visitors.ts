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
 * Both merges run on the server in ONE function, merge_visitors() (migration 0043): the window's
 * (store_window, from its staged items: per visitor the window's most recent observation) and the
 * webhooks' (merge_webhook_rows: observed_at null). It writes an observation only where it is more
 * recent than the stored row, in key order (concurrent writers lock shared visitors in one order
 * and cannot deadlock); a webhook's only inserts an unknown visitor. Each caller keeps what
 * surrounds it: a visitor row only a webhook created, that the API's copy of its item contradicts
 * and no row names any more, is deleted by the window (it would inflate counts), and one a
 * delivery inserted for a row naming another visitor by the webhooks' merge.
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
