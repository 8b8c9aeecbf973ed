import type pg from 'pg';

/**
 * A warehouse the size of a busy site's year, made in seconds with set-based INSERT ... SELECT
 * generate_series: a million feedback items, half a million survey answers, 300,000 recordings
 * and 200,000 visitors over the 365 days before today (UTC), with the vocabulary of the simulator
 * (pages, questions, test names), so the example queries of docs/warehouse.md find rows.
 *
 * Rows are inserted in day order, as day-by-day loads leave them: dt correlates with the physical
 * order, which is what the planner sees in a real warehouse.
 */
export interface BenchmarkSize {
  feedback: number;
  survey: number;
  recordings: number;
  visitors: number;
  /** Pages; the simulator's ten first, then more product pages. */
  pages: number;
  /** Survey questions; the simulator's five first (ids 11-15), then more. */
  questions: number;
  tests: number;
}

export const BENCHMARK_SIZE: BenchmarkSize = {
  feedback: 1_000_000,
  survey: 500_000,
  recordings: 300_000,
  visitors: 200_000,
  pages: 200,
  questions: 25,
  tests: 60,
};

const DAYS = 365;
/**
 * Two sources, their rows interleaved day by day, as a warehouse that loads several sites has
 * them: main, the site the examples query, and a small one, holding 1 of every 300 blocks of 10
 * feedback items, survey answers and recordings (about 3,300 feedback items in the year, a block
 * every few days). Its
 * last days through the dt index would read main's index entries too, 300 for each of its own;
 * (source_id, dt) reads its own only. The other tables are main's.
 */
export const BENCHMARK_SOURCES = ['main', 'small'] as const;
export const SMALL_SOURCE = 'small';
const SOURCE_OF = (g: string) => `(case when (${g} / 10) % 300 = 150 then '${SMALL_SOURCE}' else 'main' end)`;

/** The tables the benchmark makes big; the EXPLAIN test watches their scans. */
export const BIG_TABLES = ['feedback', 'survey_answers', 'recordings', 'visitors', 'test_result_history'];

export async function fillBenchmarkWarehouse(
  pool: pg.Pool,
  size: BenchmarkSize = BENCHMARK_SIZE,
): Promise<void> {
  // Zero-padded, so ids sort as they are made and the primary key fills in order.
  const visitor = (n: string) => `'v' || lpad(((${n}) % ${size.visitors})::text, 6, '0')`;
  // Each session's helpers, temporary: gone with it. The page of number k is a function, not a
  // join, which would reorder the rows.
  const session = [
    `create function pg_temp.bench_page(k bigint) returns text language sql immutable return
       'https://shop.example.com' || coalesce((array['/', '/pricing', '/products', '/products/red-shoes',
       '/products/blue-jacket', '/cart', '/checkout', '/blog/how-we-ship', '/help/returns', '/account'])[k + 1],
       '/products/item-' || k)`,
    `create temp table bench_agents as
       select * from (values (0, 'desktop', 'Chrome', 'Windows'), (1, 'desktop', 'Safari', 'macOS'),
         (2, 'mobile', 'Mobile Safari', 'iOS'), (3, 'mobile', 'Chrome Mobile', 'Android'),
         (4, 'desktop', 'Firefox', 'Linux'), (5, 'tablet', 'Mobile Safari', 'iPadOS')) a(i, device, browser, os)`,
  ];
  // The feedback on one connection, everything else on another: two cores, half the time.
  const feedback = [
    // g runs in day order: day (g * DAYS / n) ascends with g, the time of day scatters.
    `insert into feedback (source_id, id, feedback_id, question, session, comment, rating, rating_text, dt, url,
                           screenshot, visitor_id, raw, origin)
       select ${SOURCE_OF('g')}, g, 101 + g % 3,
              (array['How would you rate this page?', 'Did you find what you were looking for?',
                     'How likely are you to recommend us to a friend?'])[g % 3 + 1],
              's-' || g, (array['Great selection, fast checkout.', 'The size guide is hard to find.', '',
                                'Love the new design!', 'Shipping costs should be shown earlier.'])[g % 5 + 1],
              case when w then null when g % 3 = 2 then (g * 7) % 11 else 1 + (g * 7) % 5 end,
              case when w then null else (array['Hate', 'Dislike', 'Neutral', 'Like', 'Love'])[1 + (g * 7) % 5] end,
              case when w then null else
                date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
                - (${DAYS} - (g::bigint * ${DAYS} / ${size.feedback})) * interval '1 day'
                + ((g::bigint * 7919) % 86400) * interval '1 second' end,
              case when w then null else pg_temp.bench_page((g * 31) % ${size.pages}) end,
              'https://cdn.insights.example/screenshots/' || g || '.png',
              ${visitor('g * 13')}, '{}', case when w then 'webhook' else 'api' end
       from generate_series(0, ${size.feedback - 1}) g
       cross join lateral (select g % 1000 = 999 as w) provisional`,
  ];
  const rest = [
    `insert into visitors (source_id, id, name, company, email, ip, user_agent, landing_page, ref_page, created_at,
                           device, browser, os, raw)
       select 'main', ${visitor('g')}, 'Visitor ' || g, case when g % 3 = 0 then '' else 'Acme Corp' end,
              'visitor.' || g || '@mail.example', '203.0.' || (g % 256) || '.' || (g % 254 + 1), 'Mozilla/5.0',
              pg_temp.bench_page((g * 7) % ${size.pages}), case when g % 3 = 0 then '' else 'https://www.google.com/' end,
              now() - interval '400 days' + g * interval '1 minute', a.device, a.browser, a.os, '{}'
       from generate_series(0, ${size.visitors - 1}) g
       cross join lateral (select * from bench_agents a where a.i = g % 6) a`,
    `insert into survey_answers (source_id, id, question_id, question, session, comment, dt, url, visitor_id, raw)
       select ${SOURCE_OF('g')}, g, 11 + q, coalesce((array['What brought you to our site today?', 'Did you find what you needed?',
                     'What almost stopped you from buying?', 'How did you hear about us?',
                     'Anything else you want to tell us?'])[q + 1], 'Question ' || (11 + q)),
              's-' || g, (array['Yes', 'No', 'Partly', 'Price', ''])[1 + (g * 3) % 5],
              date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
                - (${DAYS} - (g::bigint * ${DAYS} / ${size.survey})) * interval '1 day'
                + ((g::bigint * 7919) % 86400) * interval '1 second',
              pg_temp.bench_page((g * 11) % ${size.pages}), ${visitor('g * 17')}, '{}'
       from generate_series(0, ${size.survey - 1}) g
       cross join lateral (select g % ${size.questions} as q) question`,
    `insert into recordings (source_id, id, duration, landing_page, referral, country, city, user_ip, user_agent,
                             dt, video_link, raw)
       select ${SOURCE_OF('g')}, 'rec-' || lpad(g::text, 7, '0'), 3 + (g * 37) % 1800, pg_temp.bench_page((g * 3) % ${size.pages}), '',
              (array['Germany', 'France', 'United States', 'Japan', 'Brazil', 'Nigeria', 'Sweden'])[1 + g % 7],
              (array['Berlin', 'Lyon', 'Austin', 'Osaka', 'Recife', 'Lagos', 'Göteborg'])[1 + g % 7],
              '198.51.100.' || (g % 254 + 1), 'Mozilla/5.0',
              date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
                - (${DAYS} - (g::bigint * ${DAYS} / ${size.recordings})) * interval '1 day'
                + ((g::bigint * 7919) % 86400) * interval '1 second',
              'https://app.insights.example/recordings/rec-' || g, '{}'
       from generate_series(0, ${size.recordings - 1}) g`,
    `insert into ab_tests (source_id, id, test_name, url, goal_profile_id, created_at, updated_at, raw)
       select 'main', 'ab-' || g, (array['Checkout button colour', 'Hero headline copy', 'Free-shipping banner',
              'Pricing table layout', 'Product page gallery', 'Newsletter popup timing'])[1 + g % 6] || ' #' || g,
              pg_temp.bench_page(g % ${size.pages}), 'gp-' || g, now() - interval '400 days', now(), '{}'
       from generate_series(0, ${size.tests - 1}) g`,
    // Exactly one test carries the documented name, as in the examples.
    `update ab_tests set test_name = 'Checkout button colour' where id = 'ab-0'`,
    `insert into personalization_tests (source_id, id, test_name, url, goal_profile_id, created_at, updated_at, raw)
       select 'main', 'wp-' || g, 'Returning visitor greeting #' || g, pg_temp.bench_page(g % ${size.pages}), 'gp-' || g,
              now() - interval '400 days', now(), '{}'
       from generate_series(0, ${Math.floor(size.tests / 3) - 1}) g`,
    `create temp table bench_variants as
       select kind, test_id, variant, v
       from (select 'abtesting' as kind, id as test_id from ab_tests
             union all select 'personalization', id from personalization_tests) t
       cross join lateral (values ('control', 0), ('variant 1', 1), ('variant 2', 2)) x(variant, v)`,
    `insert into test_results (source_id, test_kind, test_id, variant, complete, total, raw)
       select 'main', kind, test_id, variant, ${DAYS} * (20 + v * 2), ${DAYS} * 200, '{}' from bench_variants`,
    `insert into test_result_history (source_id, test_kind, test_id, variant, day, complete, total)
       select 'main', kind, test_id, variant, (now() at time zone 'UTC')::date - d, (${DAYS} - d) * (20 + v * 2),
              (${DAYS} - d) * 200
       from bench_variants cross join generate_series(0, ${DAYS - 1}) d`,
    `insert into sync_runs (trigger, status, started_at, finished_at, summary)
       select 'schedule', 'ok', now() - d * interval '1 day', now() - d * interval '1 day' + interval '1 minute',
              '{"main": {"feedback": {}, "survey": {}, "recordings": {}, "abtesting": {}, "personalization": {},
                "heatmaps": {}}}'
       from generate_series(${DAYS}, 0, -1) d`,
    `insert into sync_windows (source_id, resource, day, status, item_count, truncated, fetched_at)
       select 'main', r, (now() at time zone 'UTC')::date - d, case when d = 0 then 'open' else 'done' end, 1000,
              d = 100, now() - d * interval '1 day'
       from generate_series(0, ${DAYS}) d cross join unnest(array['feedback', 'survey', 'recordings']) r`,
    `insert into watermarks (source_id, resource, start_day, day)
       select 'main', r, (now() at time zone 'UTC')::date - ${DAYS}, (now() at time zone 'UTC')::date - 1
       from unnest(array['feedback', 'survey', 'recordings']) r`,
  ];

  for (const source of BENCHMARK_SOURCES)
    await pool.query(`insert into sources (source_id, base_url) values ($1, 'https://api.example.com')`, [
      source,
    ]);
  // Building an index once is far cheaper than maintaining it through a million random inserts:
  // the migration's indexes are set aside and made again, from their own definitions, after.
  const { rows: indexes } = await pool.query<{ table: string; name: string; definition: string }>(
    `select t.relname as table, i.relname as name, pg_get_indexdef(x.indexrelid) as definition
       from pg_index x join pg_class i on i.oid = x.indexrelid
       join pg_class t on t.oid = x.indrelid
      where t.relnamespace = current_schema()::regnamespace and t.relname = any($1)
        and not exists (select 1 from pg_constraint k where k.conindid = x.indexrelid)`,
    [BIG_TABLES],
  );
  for (const index of indexes) await pool.query(`drop index ${index.name}`);
  // A throwaway database needs no crash safety: no WAL for the big tables (cheap while empty).
  for (const table of BIG_TABLES) await pool.query(`alter table ${table} set unlogged`);
  const rebuild = (tables: readonly string[]) =>
    indexes.filter((i) => tables.includes(i.table)).map((i) => i.definition);
  await Promise.all([
    run(pool, [...session, ...feedback, ...rebuild(['feedback'])]),
    run(pool, [...session, ...rest, ...rebuild(BIG_TABLES.filter((t) => t !== 'feedback'))]),
  ]);
  await pool.query('analyze');
}

async function run(pool: pg.Pool, statements: string[]): Promise<void> {
  const client = await pool.connect();
  try {
    // Speed only, not a different outcome: no fsync wait per statement, room to build indexes in
    // memory, and no foreign-key trigger per row (the rows are consistent by construction; the
    // setting needs a superuser, and without one the triggers just run).
    await client.query('set synchronous_commit = off');
    await client.query(`set maintenance_work_mem = '256MB'`);
    await client.query('set session_replication_role = replica').catch(() => {});
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.query('reset session_replication_role').catch(() => {});
    client.release();
  }
}
