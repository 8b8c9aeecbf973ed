import type { Kysely } from 'kysely';
import { replaceInFunction, storeWindow } from './0050-caps-shared-by-workers.js';

/**
 * A day's whole answer that lacks a row of the day the same run stored contradicts what the server
 * served minutes before: a neighbouring day's answer held the item (read by this writer or by
 * another of a queued run's workers, who alone saw it), or the day's own earlier read did. Either
 * the reading changed under the run (a deploy: the request no longer holds all of the day) or the
 * item went in those minutes; the answer cannot tell which. Taken as whole, it marked the row
 * absent and settled the day complete one item short, the worker that read the neighbour having no
 * way to tell the day's writer. store_window() now checks it first (the rows of the day whose
 * last_changed_at is at or after the run's start, the API's and not only a webhook's where
 * webhooks write the table, not marked absent, keyed by no item of the answer) and, finding any:
 * - takes the answer as not whole: no row of the day is marked absent, the rows it serves are
 *   written as any answer's;
 * - records the day flagged truncated and reopened (read first by the run's next pass or the next
 *   run), its item_count the answer's items and the rows it lacked, so that a later answer holding
 *   fewer is read as short again, and the flag is cleared only by one holding as many;
 * - returns their count as `lacking`: the run learns the reading again (src/sync/run-window.ts).
 * Frozen once shipped.
 */

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and must not depend on the app's Database type.
type AnyDb = Kysely<any>;

/**
 * The rows of the day a run stored that the answer lacks, by the resource's table and key; of a
 * table webhooks write too (`origin`), the API's rows alone.
 */
function lackingRows(table: string, key: string, keyOfItem: string, origin: boolean): string {
  return `select count(*)::int into v_lacking from ${table} t
           where t.source_id = p_source and t.dt >= (p_day::timestamp at time zone 'UTC') and t.dt < ((p_day + 1)::timestamp at time zone 'UTC')
             and t.last_changed_at >= v_run_start${origin ? " and t.origin <> 'webhook'" : ''} and t.absent_since is null
             and ${key} not in (select ${keyOfItem} from jsonb_array_elements(p_items) x)`;
}

const CHECK = `    -- A whole answer lacking a row of its day this run stored (another answer of the run served
    -- it) is not whole: migration 0053. The key sets are hashed (NOT IN): a row is one probe.
    if p_whole and p_run_id is not null and p_ledger is not null then
      select r.started_at into v_run_start from sync_runs r where r.run_id = p_run_id;
      case p_resource
        when 'feedback' then
          ${lackingRows('feedback', '(t.id, t.feedback_id)', "(x ->> 'id')::bigint, (x ->> 'feedback_id')::bigint", true)};
        when 'survey' then
          ${lackingRows('survey_answers', '(t.id, t.question_id)', "(x ->> 'id')::bigint, (x ->> 'question_id')::bigint", true)};
        when 'recordings' then
          ${lackingRows('recordings', 't.id', "x ->> 'id'", false)};
        else null;
      end case;
      if v_lacking > 0 then p_whole := false; end if;
    end if;
`;

const FLAG = `    if v_lacking > 0 then
      -- Flagged and read again first: the rows it lacked are held, and counted as the day's.
      update sync_windows set truncated = true, item_count = item_count + v_lacking,
                              reopened_at = now(), proved_at = null
       where source_id = p_source and resource = p_resource and day = p_day;
      v_load := v_load || jsonb_build_object('lacking', v_lacking);
    end if;
`;

/** The parts of store_window() as 0051 left them, and what each becomes. */
const EDITS = [
  {
    from: '    v_next date;\n  begin\n',
    to: '    v_next date;\n    v_run_start timestamptz;\n    v_lacking integer := 0;\n  begin\n',
  },
  {
    from: "    case p_resource\n      when 'feedback' then v_load := merge_window_feedback(",
    to: `${CHECK}    case p_resource\n      when 'feedback' then v_load := merge_window_feedback(`,
  },
  {
    from: "    if p_ledger ->> 'status' = 'done' then\n",
    to: `${FLAG}    if p_ledger ->> 'status' = 'done' then\n`,
  },
];

export async function up(db: AnyDb): Promise<void> {
  await replaceInFunction(db, await storeWindow(db), EDITS);
}

export async function down(db: AnyDb): Promise<void> {
  await replaceInFunction(
    db,
    await storeWindow(db),
    EDITS.map((s) => ({ from: s.to, to: s.from })),
  );
}
