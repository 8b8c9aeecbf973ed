import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReportHtml } from '../../src/report/render-html.js';
import { COMMENT_CHARS, loadReportData } from '../../src/report/report-data.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** Visitor comments are not bounded by the API: the page embeds each one cut, and says so. */
describe('long comments in the report', () => {
  let t: TestDatabase;
  const day = '2026-03-02';
  // 200 KB, as the comments that once made a 66 MB page; a surrogate pair sits across the cut.
  const long = `${'<é'.repeat(COMMENT_CHARS / 2 - 1)}a😀${'x'.repeat(200_000)}`;
  const short = 'Fast enough.';

  beforeAll(async () => {
    t = await createTestDatabase();
    await sql`insert into sources (source_id, base_url) values ('shop', 'https://api.example.com')`.execute(
      t.db,
    );
    const comments = [long, long, long, short, 'y'.repeat(COMMENT_CHARS)];
    for (const [i, comment] of comments.entries()) {
      await sql`insert into feedback (source_id, id, feedback_id, question, comment, dt, raw, origin)
                values ('shop', ${i + 1}, 1, 'Why?', ${comment}, ${`${day}T10:0${i}:00Z`}, '{}', 'api')`.execute(
        t.db,
      );
    }
  });
  afterAll(async () => {
    await t.drop();
  });

  it(`embeds a comment's first ${COMMENT_CHARS} characters and says where it was cut`, async () => {
    const data = await loadReportData(t.db, { from: day, to: day });
    const byLength = data.comments.map((c) => [[...c.comment].length, c.commentChars]);
    const longChars = [...long].length;
    expect(byLength).toEqual([
      [COMMENT_CHARS, COMMENT_CHARS],
      [short.length, short.length],
      [COMMENT_CHARS, longChars],
      [COMMENT_CHARS, longChars],
      [COMMENT_CHARS, longChars],
    ]);
    // Whole characters: the emoji is the last one kept, not half of it.
    expect(data.comments[2]?.comment).toBe([...long].slice(0, COMMENT_CHARS).join(''));
    expect(data.comments[2]?.comment.endsWith('😀')).toBe(true);

    const html = renderReportHtml(data, '');
    const note = `… (cut at 2,000 of ${longChars.toLocaleString('en-US')} characters)</span>`;
    expect(html.split(note)).toHaveLength(4);
    // A comment of exactly the length, and a short one, are whole and carry no note.
    expect(html).toContain(`<td class="comment">${'y'.repeat(COMMENT_CHARS)}</td>`);
    expect(html).toContain(`<td class="comment">${short}</td>`);
    expect(html).not.toContain('x'.repeat(COMMENT_CHARS));
    // Three comments of 200 KB: the page stays far below what they would weigh whole (1.2 MB).
    expect(html.length).toBeLessThan(150_000);
  });

  it('shows a comment only the webhook has delivered without a time: webhook only, and its receipt day', async () => {
    const received = '2026-03-03';
    await sql`insert into feedback (source_id, id, feedback_id, question, comment, dt, raw, origin, webhook_received_at)
              values ('shop', 99, 1, 'Why?', 'Sent from the webhook', null, '{}', 'webhook', ${`${received}T08:30:00Z`})`.execute(
      t.db,
    );
    const data = await loadReportData(t.db, { from: day, to: received });
    const comment = data.comments.find((c) => c.comment === 'Sent from the webhook');
    expect(comment).toMatchObject({ day: received, dt: null });
    const html = renderReportHtml(data, '');
    const when = new RegExp(
      `<tr data-source="shop" data-day="${received}">\\s*<td class="when">(.*?)</td>`,
    ).exec(html)?.[1];
    expect(when?.replace(/<[^>]*>/g, '')).toBe(
      `webhook only, not yet read from the API (received ${received})`,
    );
    expect(html).not.toMatch(/<td[^>]*> UTC<\/td>/);
  });
});
