import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log/logger.js';
import { publishVerifyMetrics } from '../../src/sync/verify.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  fillVerifiedLedger,
  LEDGER_FROM,
  SHORT_DAY,
  VERIFIED_FROM,
  type VerifiedLedger,
} from '../helpers/verified-ledger.js';
import { checkExposition, samples } from './check-exposition.js';

/**
 * The verify gauges in node_exporter's textfile, against a ledger holding verified and never
 * verified settled days (a real backfill and verify): each number is the ledger's, counted here
 * with SQL of its own, and the text passes the exposition checks (promtool where installed).
 */
describe("the verifies' metrics", () => {
  let t: TestDatabase;
  let dir: string;
  let file: string;
  let ledger: VerifiedLedger;
  let text: string;

  beforeAll(async () => {
    t = await createTestDatabase();
    dir = await mkdtemp(path.join(tmpdir(), 'verify-metrics-'));
    file = path.join(dir, 'insights_sync.prom');
    ledger = await fillVerifiedLedger(t, { metricsFile: file });
    text = await readFile(file, 'utf8');
  });
  afterAll(async () => {
    await ledger.sim.stop();
    await t.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const value = (name: string, labels: Record<string, string> = {}) => {
    const found = samples(text).filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
    if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
    return found[0]?.value;
  };

  it('before the verify recorded its findings, its runs published the ledger as it was', () => {
    // The verify's own run published while no day was yet recorded as verified.
    expect(value('insights_sync_verify_recent_windows', { source: 'main' })).toBe(0);
    expect(value('insights_sync_verify_last_timestamp_seconds', { source: 'main' })).toBe(0);
  });

  it('after it, holds what the verify found, per source, and passes the exposition checks', async () => {
    const published = await publishVerifyMetrics(
      t.db,
      ledger.verify,
      { metricsFile: file, metricsPort: undefined },
      silentLogger(),
    );
    expect(published).toEqual({});
    text = await readFile(file, 'utf8');
    const check = await checkExposition(text);
    expect(check, check.output).toEqual({ code: 0, output: '' });

    const counts = await t.db
      .selectFrom('sync_windows')
      .select((eb) => [
        eb.fn.countAll<string>().as('settled'),
        eb.fn.count<string>('last_verified_at').as('verified'),
        eb.fn.max('last_verified_at').as('last'),
        eb.fn.min('last_verified_at').as('least'),
      ])
      .where('status', '=', 'done')
      .executeTakeFirstOrThrow();
    const settled = Number(counts.settled);
    const verified = Number(counts.verified);
    expect(verified).toBe(4);
    expect(value('insights_sync_verify_settled_windows', { source: 'main' })).toBe(settled);
    expect(value('insights_sync_verify_unverified_windows', { source: 'main' })).toBe(settled - verified);
    expect(value('insights_sync_verify_recent_windows', { source: 'main' })).toBe(verified);
    // The range's first day was never verified (only feedback of VERIFIED_FROM.. was).
    expect(LEDGER_FROM < VERIFIED_FROM).toBe(true);
    expect(value('insights_sync_verify_oldest_unverified_day_timestamp_seconds', { source: 'main' })).toBe(
      Date.parse(`${LEDGER_FROM}T00:00:00Z`) / 1000,
    );
    expect(value('insights_sync_verify_last_timestamp_seconds', { source: 'main' })).toBe(
      (counts.last as Date).getTime() / 1000,
    );
    expect(value('insights_sync_verify_least_recent_timestamp_seconds', { source: 'main' })).toBe(
      (counts.least as Date).getTime() / 1000,
    );
    expect(value('insights_sync_verify_recent_items', { source: 'main', outcome: 'lacked' })).toBe(
      ledger.lacked,
    );
    for (const outcome of ['changed', 'gone', 'moved'])
      expect(value('insights_sync_verify_recent_items', { source: 'main', outcome })).toBe(0);
    expect(ledger.verify.days.find((d) => d.day === SHORT_DAY)?.lacked).toBe(ledger.lacked);
  });

  it('with every settled day verified, the oldest unverified day is 0', async () => {
    await t.db.updateTable('sync_windows').set({ last_verified_at: new Date() }).execute();
    await publishVerifyMetrics(
      t.db,
      ledger.verify,
      { metricsFile: file, metricsPort: undefined },
      silentLogger(),
    );
    text = await readFile(file, 'utf8');
    expect(value('insights_sync_verify_oldest_unverified_day_timestamp_seconds', { source: 'main' })).toBe(0);
    expect(value('insights_sync_verify_unverified_windows', { source: 'main' })).toBe(0);
  });
});
