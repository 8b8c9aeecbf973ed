import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReport } from '../../src/report/build-report.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  fillVerifiedLedger,
  LEDGER_FROM,
  LEDGER_TO,
  SHORT_DAY,
  type VerifiedLedger,
} from '../helpers/verified-ledger.js';

/** The rows of one table of a section as cell texts (tags dropped). */
function tableRows(html: string, csv: string): string[][] {
  const table = new RegExp(`<table data-csv="${csv}">(.*?)</table>`, 's').exec(html)?.[1] ?? '';
  const body = /<tbody>(.*?)<\/tbody>/s.exec(table)?.[1] ?? '';
  return [...body.matchAll(/<tr[^>]*>(.*?)<\/tr>/gs)].map((row) =>
    [...(row[1] ?? '').matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((cell) => (cell[1] ?? '').trim()),
  );
}

const section = (html: string) => /<h2>Verification<\/h2>(.*?)<\/section>/s.exec(html)?.[1] ?? '';

/**
 * The report's Verification section, built from a real ledger (backfill and verify against the
 * simulator): before any verify it says none ran and how to start one; after, per source, when
 * days were last verified, the oldest never verified, and the day the verify found short, by day
 * and resource, with its counts.
 */
describe('the report shows the verifies', () => {
  let t: TestDatabase;
  let ledger: VerifiedLedger;
  let before: string;
  let after: string;
  /** What docs/analysts.md's queries of the days found short return on the verified ledger. */
  let documented: Record<string, unknown>[][];

  beforeAll(async () => {
    t = await createTestDatabase();
    ledger = await fillVerifiedLedger(t);
    const options = { from: LEDGER_FROM, to: LEDGER_TO };
    after = (await buildReport(t.db, options, new Date())).html;
    const block = [...readFileSync('docs/analysts.md', 'utf8').matchAll(/^```sql\n([\s\S]*?)^```$/gm)]
      .map((m) => m[1] ?? '')
      .find((b) => b.includes('last_verify_lacked > 0'));
    documented = [];
    for (const query of (block ?? '').split(';').filter((q) => q.trim() !== ''))
      documented.push((await sql.raw<Record<string, unknown>>(query).execute(t.db)).rows);
    // The same warehouse as if no verify had run: the empty state.
    await t.db
      .updateTable('sync_windows')
      .set({
        last_verified_at: null,
        last_verify_lacked: null,
        last_verify_changed: null,
        last_verify_gone: null,
        last_verify_moved: null,
      })
      .execute();
    before = (await buildReport(t.db, options, new Date())).html;
  });
  afterAll(async () => {
    await ledger.sim.stop();
    await t.drop();
  });

  it('says when no day was verified yet, and how to verify', () => {
    expect(section(before)).toContain(
      'No day verified yet — run `insights-sync verify` or let the schedule&#39;s scrub run.',
    );
    expect(section(before)).not.toContain('<table');
  });

  it("per source: when days were last verified, the oldest unverified day, and the 30 days' findings", async () => {
    const settled = await t.db
      .selectFrom('sync_windows')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('status', '=', 'done')
      .executeTakeFirstOrThrow();
    const [row, ...others] = tableRows(after, 'verification');
    expect(others).toEqual([]);
    expect(row?.[0]).toBe('main');
    expect(row?.[1]).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    expect(row?.slice(3)).toEqual([
      `${Number(settled.n) - 4} of ${Number(settled.n)}`,
      LEDGER_FROM,
      '4',
      String(ledger.lacked),
      '0',
      '0',
      '0',
    ]);
  });

  it('names the day found short, by resource, with what its verify found', () => {
    const rows = tableRows(after, 'verification-differences');
    expect(rows.map((r) => [r[0], r[1], r[2], ...r.slice(4)])).toEqual([
      ['main', 'feedback', SHORT_DAY, String(ledger.lacked), '0', '0', '0'],
    ]);
  });

  it("docs/analysts.md's queries find the day found short and the days never verified", () => {
    expect(documented).toHaveLength(2);
    const [short, never] = documented;
    expect(short?.map((r) => [r.source_id, r.resource, String(r.day), r.last_verify_lacked])).toEqual([
      ['main', 'feedback', SHORT_DAY, ledger.lacked],
    ]);
    // Only feedback of four days was verified: every other settled day is listed, from the first.
    const feedback = never?.find((r) => r.resource === 'feedback');
    expect(Number(feedback?.never_verified)).toBe(6);
    expect(String(feedback?.oldest)).toBe(LEDGER_FROM);
    expect(never?.map((r) => r.resource).sort()).toEqual(['feedback', 'recordings', 'survey']);
  });
});
