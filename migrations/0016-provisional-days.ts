import { type Kysely, sql } from 'kysely';

/**
 * Webhook rows get a provisional day. Frozen once shipped, like the others.
 *
 * A feedback item or survey answer only a webhook has delivered has no dt (spec 6: the bodies
 * carry none), so the daily views left it out until the nightly sync loaded its day. It now
 * counts on the UTC day its delivery was received (webhook_received_at), marked provisional;
 * once the API has given its dt the row counts on dt's day, and only there. The bodies carry no
 * timestamp of the item itself (visitor.created_at is the visitor's, not the feedback's), so the
 * receipt is the best day there is: the service sends the webhook "when a feedback is received".
 *
 * feedback_enriched, survey_answers_enriched and daily_activity are replaced, keeping their
 * columns in order and adding is_provisional (the two enriched views) or the provisional counts
 * (daily_activity). Each is a UNION ALL of the rows with dt and those without: a filter on `day`
 * still reaches the day index of 0004 for the first, and the partial index below for the second.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

const TABLES = ['feedback', 'survey_answers'] as const;

const UTC_DAY = (alias: string) => `((${alias}.dt at time zone 'UTC')::date)`;
/**
 * The provisional day. first_seen_at only for a row that has no receipt time, such as one written
 * without the receiver: every webhook row this migration finds gets one (below), and so does
 * every row the receiver writes from now on.
 */
const RECEIVED_DAY = (alias?: string) => {
  const of = (column: string) => (alias === undefined ? column : `${alias}.${column}`);
  return `((coalesce(${of('webhook_received_at')}, ${of('first_seen_at')}) at time zone 'UTC')::date)`;
};

const RECEIVED_AT =
  'When the webhook delivery that first brought this row was received (UTC), for rows a webhook delivered before the API did; null for rows the API loaded first. While dt is null (only the webhook has the row) its UTC day is the provisional day the daily views count the row on. Kept when the API completes the row.';

const VIEW_COMMENTS = {
  feedback_enriched: {
    view: "Each feedback row with its visitor (device, browser, os, landing page, referrer) and its UTC day, for grouping. A provisional webhook row (no dt yet) has the UTC day its delivery was received and is_provisional true, until the API's dt replaces it.",
    day: "UTC day of dt; for a provisional row (dt null: only the webhook has delivered it) the UTC day the webhook delivery was received, replaced by dt's day once the API loads the row. Filter on it to use the day index.",
    is_provisional:
      "True while only the webhook has delivered the row (dt null, origin 'webhook'): its day is the delivery's receipt day, not yet the day the API says the feedback was given.",
  },
  survey_answers_enriched: {
    view: "Each survey answer with its visitor (device, browser, os, landing page, referrer) and its UTC day, for grouping. A provisional webhook row (no dt yet) has the UTC day its delivery was received and is_provisional true, until the API's dt replaces it.",
    day: "UTC day of dt; for a provisional row (dt null: only the webhook has delivered it) the UTC day the webhook delivery was received, replaced by dt's day once the API loads the row. Filter on it to use the day index.",
    is_provisional:
      "True while only the webhook has delivered the row (dt null, origin 'webhook'): its day is the delivery's receipt day, not yet the day the API says the answer was given.",
  },
  daily_activity: {
    view: "Per source and UTC day: feedback, survey answers and recordings, counted by their dt. A day without any has no row. Rows only the webhook has delivered (no dt yet) count on the UTC day their delivery was received, and provisional_feedback_count / provisional_survey_answer_count say how many of the day's counts they are; once the API loads them they count on their dt's day instead, once.",
    provisional_feedback_count:
      "How many of feedback_count are provisional: delivered by the webhook on this UTC day, not yet loaded by the API (no dt). They move to their dt's day when the API loads them.",
    provisional_survey_answer_count:
      "How many of survey_answer_count are provisional: delivered by the webhook on this UTC day, not yet loaded by the API (no dt). They move to their dt's day when the API loads them.",
  },
} as const;

export async function up(db: AnyDb): Promise<void> {
  for (const table of TABLES) {
    await db.schema.alterTable(table).addColumn('webhook_received_at', 'timestamptz').execute();
    // Rows stored by a webhook before now: stored in the delivery's own transaction, so its time.
    await sql`update ${sql.table(table)} set webhook_received_at = first_seen_at where origin = 'webhook'`.execute(
      db,
    );
    await sql`comment on column ${sql.ref(`${table}.webhook_received_at`)} is ${sql.lit(RECEIVED_AT)}`.execute(
      db,
    );
    // The daily views' filter on day, for the rows without dt: few, so a small partial index.
    await sql`create index ${sql.id(`${table}_provisional_day_idx`)} on ${sql.table(table)}
              (${sql.raw(RECEIVED_DAY())}) where dt is null`.execute(db);
  }
  await sql`create or replace view feedback_enriched as ${sql.raw(feedbackEnriched())}`.execute(db);
  await sql`create or replace view survey_answers_enriched as ${sql.raw(surveyEnriched())}`.execute(db);
  await sql`create or replace view daily_activity as ${sql.raw(dailyActivity())}`.execute(db);
  for (const [view, comments] of Object.entries(VIEW_COMMENTS)) {
    const { view: text, ...columns } = comments;
    await sql`comment on view ${sql.table(view)} is ${sql.lit(text)}`.execute(db);
    for (const [column, comment] of Object.entries(columns))
      await sql`comment on column ${sql.ref(`${view}.${column}`)} is ${sql.lit(comment)}`.execute(db);
  }
}

/**
 * The views as 0004 made them (0009 recreated them unchanged), and their comments: a view
 * cannot lose columns in place, so each is dropped and made again.
 */
export async function down(db: AnyDb): Promise<void> {
  const saved = new Map<string, { view: string | null; columns: Map<string, string | null> }>();
  for (const view of Object.keys(VIEW_COMMENTS)) {
    const about = await sql<{ name: string | null; comment: string | null }>`
      select null as name, obj_description(${view}::regclass, 'pg_class') as comment
      union all
      select attname, col_description(attrelid, attnum) from pg_attribute
       where attrelid = ${view}::regclass and attnum > 0 and not attisdropped`.execute(db);
    const columns = new Map(
      about.rows.filter((r) => r.name !== null).map((r) => [r.name as string, r.comment]),
    );
    saved.set(view, { view: about.rows.find((r) => r.name === null)?.comment ?? null, columns });
    await sql`drop view ${sql.table(view)}`.execute(db);
  }
  await sql`create view feedback_enriched as ${sql.raw(feedbackEnriched(false))}`.execute(db);
  await sql`create view survey_answers_enriched as ${sql.raw(surveyEnriched(false))}`.execute(db);
  await sql`create view daily_activity as ${sql.raw(dailyActivity(false))}`.execute(db);
  const OLD_DAY = 'UTC day of dt; filter on it to use the day index.';
  for (const [view, { columns }] of saved) {
    await sql`comment on view ${sql.table(view)} is ${sql.lit(OLD_VIEW_COMMENTS[view] ?? '')}`.execute(db);
    const kept = await sql<{ name: string }>`
      select attname as name from pg_attribute
       where attrelid = ${view}::regclass and attnum > 0 and not attisdropped`.execute(db);
    for (const { name } of kept.rows) {
      const comment = name === 'day' && view !== 'daily_activity' ? OLD_DAY : columns.get(name);
      if (comment)
        await sql`comment on column ${sql.ref(`${view}.${name}`)} is ${sql.lit(comment)}`.execute(db);
    }
  }
  for (const table of TABLES) {
    await sql`drop index ${sql.id(`${table}_provisional_day_idx`)}`.execute(db);
    await db.schema.alterTable(table).dropColumn('webhook_received_at').execute();
  }
}

const OLD_VIEW_COMMENTS: Record<string, string> = {
  feedback_enriched:
    'Each feedback row with its visitor (device, browser, os, landing page, referrer) and its UTC day, for grouping. Provisional webhook rows have no dt and no day.',
  survey_answers_enriched:
    'Each survey answer with its visitor (device, browser, os, landing page, referrer) and its UTC day, for grouping. Provisional webhook rows have no dt and no day.',
  daily_activity:
    'Per source and UTC day: feedback, survey answers and recordings, counted by their dt. A day without any has no row. Provisional webhook rows (no dt yet) are not counted.',
};

/** With provisional rows: one branch per kind of row, so each filter on day finds its index. */
function feedbackEnriched(provisional = true): string {
  const branch = (day: string, where: string, flag: string) => `
    select f.source_id, f.id, f.feedback_id, f.question, f.session, f.comment, f.rating, f.rating_text,
           f.dt, ${day} as day, f.url, f.screenshot, f.origin,
           f.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page${flag}
    from feedback f
    left join visitors v on v.source_id = f.source_id and v.id = f.visitor_id${where}`;
  if (!provisional) return branch(UTC_DAY('f'), '', '');
  return `${branch(UTC_DAY('f'), '\n    where f.dt is not null', ', false as is_provisional')}
    union all${branch(RECEIVED_DAY('f'), '\n    where f.dt is null', ', true')}`;
}

function surveyEnriched(provisional = true): string {
  const branch = (day: string, where: string, flag: string) => `
    select s.source_id, s.id, s.question_id, s.question, s.comment as answer, s.session,
           s.dt, ${day} as day, s.url, s.origin,
           s.visitor_id, v.device, v.browser, v.os, v.landing_page, v.ref_page${flag}
    from survey_answers s
    left join visitors v on v.source_id = s.source_id and v.id = s.visitor_id${where}`;
  if (!provisional) return branch(UTC_DAY('s'), '', '');
  return `${branch(UTC_DAY('s'), '\n    where s.dt is not null', ', false as is_provisional')}
    union all${branch(RECEIVED_DAY('s'), '\n    where s.dt is null', ', true')}`;
}

function dailyActivity(provisional = true): string {
  const feedbackDay = UTC_DAY('feedback');
  const surveyDay = UTC_DAY('survey_answers');
  const withDt = `
      select source_id, ${feedbackDay} as day, 'feedback' as kind, rating,
             null::bigint as response_id, null::bigint as duration${provisional ? ', false as provisional' : ''}
      from feedback where dt is not null
      union all
      select source_id, ${surveyDay}, 'survey', null, id, null${provisional ? ', false' : ''}
      from survey_answers where dt is not null
      union all
      select source_id, ${UTC_DAY('recordings')}, 'recording', null, null, duration${provisional ? ', false' : ''}
      from recordings`;
  const withoutDt = `
      union all
      select source_id, ${RECEIVED_DAY('feedback')}, 'feedback', rating, null, null, true
      from feedback where dt is null
      union all
      select source_id, ${RECEIVED_DAY('survey_answers')}, 'survey', null, id, null, true
      from survey_answers where dt is null`;
  return `
    select source_id, day,
           count(*) filter (where kind = 'feedback') as feedback_count,
           avg(rating)::double precision as average_rating,
           count(*) filter (where kind = 'survey') as survey_answer_count,
           count(distinct response_id) as survey_response_count,
           count(*) filter (where kind = 'recording') as recording_count,
           avg(duration)::double precision as average_recording_duration${
             provisional
               ? `,
           count(*) filter (where kind = 'feedback' and provisional) as provisional_feedback_count,
           count(*) filter (where kind = 'survey' and provisional) as provisional_survey_answer_count`
               : ''
           }
    from (${withDt}${provisional ? withoutDt : ''}
    ) items
    group by source_id, day`;
}
