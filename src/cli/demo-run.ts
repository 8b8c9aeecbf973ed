import type pg from 'pg';
import { loadConfig } from '../config/config.js';
import { loadDotEnv } from '../config/dotenv.js';
import { createLogger, loggerOptions } from '../log/logger.js';
import { printProse, terminalColumns } from '../log/terminal-text.js';
import { startSimulator } from '../simulator/server.js';
import { statusReport } from '../status/status-report.js';
import { forcedExitRecorder, runLocked } from '../sync/run-locked.js';
import { shutdownSignal } from '../sync/shutdown.js';
import { addDays, todayUtc } from '../time/days.js';
import { formatTable } from './format-table.js';
import { printRun } from './print-run.js';
import { renderStatus } from './status.js';
import { usingWarehouse } from './warehouse.js';

/** What an analyst asks first; the demo runs these on what it loaded and shows the answers. */
const ANALYST_QUERIES = [
  {
    title: 'A/B tests: complete / total per variant',
    sql: `select t.test_name, r.variant, r.complete, r.total,
       round(100.0 * r.complete / nullif(r.total, 0), 1) as complete_pct
  from test_results r
  join ab_tests t on t.source_id = r.source_id and t.id = r.test_id
 where r.test_kind = 'abtesting' and t.removed_at is null and r.removed_at is null
 order by t.test_name, r.variant`,
  },
  {
    title: 'Feedback of the last 7 days: count, average rating, visitors',
    sql: `select (f.dt at time zone 'UTC')::date::text as day, count(*) as feedback,
       round(avg(f.rating), 2) as avg_rating, count(distinct f.visitor_id) as visitors
  from feedback f
 where f.dt >= now() - interval '7 days'
 group by 1
 order by 1`,
  },
] as const;

export async function runDemo(options: { days: number; seed: number; keepRunning: boolean }): Promise<void> {
  const dotEnvWarning = loadDotEnv();
  const config = loadConfig({ requireSources: false });
  // The demo's own output is the story; only warnings and errors are logged.
  const logger = createLogger({
    ...loggerOptions(config),
    level: config.logLevel === 'info' ? 'warn' : config.logLevel,
  });
  if (dotEnvWarning !== undefined) logger.warn(dotEnvWarning);
  const out = (text: string) => printProse(text);
  const today = todayUtc(new Date());
  const from = addDays(today, -(options.days - 1));
  const sim = await startSimulator({ seed: options.seed, from, to: today });
  const recorder = forcedExitRecorder();
  const shutdown = shutdownSignal({ logger, graceMs: config.shutdownGraceMs, onForce: recorder.onForce });
  const context = {
    // The demo needs nothing installed: without DATABASE_URL, the embedded database, as its --help says.
    config: {
      ...config,
      embedded: true,
      startDate: from,
      sources: [{ name: 'demo', baseUrl: sim.url, apiKey: sim.apiKey }],
    },
    logger,
  };
  const runOptions = { signal: shutdown.signal, ...recorder.hooks };
  try {
    await usingWarehouse(context.config, logger, async (warehouse) => {
      out(`1. The simulator of the service is at ${sim.url}.\n`);
      out(`2. Backfill of ${from} .. ${today}:\n`);
      printRunQuietly(
        await runLocked(warehouse, context, { trigger: 'backfill', range: { from, to: today } }, runOptions),
      );
      out('\n3. The nightly sync (the lookback days and today):\n');
      printRunQuietly(await runLocked(warehouse, context, { trigger: 'sync' }, runOptions));
      if (shutdown.signal.aborted) return;
      out(
        `\n4. insights-sync status:\n${renderStatus(await statusReport(warehouse.db, today), { columns: terminalColumns(process.stdout) })}`,
      );
      for (const [i, query] of ANALYST_QUERIES.entries()) {
        out(`\n${5 + i}. ${query.title}:\n\n${query.sql};\n\n${await runQuery(warehouse.pool, query.sql)}\n`);
      }
      // The password stays in its file (mode 0600): output ends up in logs.
      const psql = warehouse.embedded
        ? `PGPASSWORD="$(cat '${warehouse.passwordFile}')" psql '${withoutPassword(warehouse.url)}'`
        : 'psql "$DATABASE_URL"';
      out(
        `\nConnect with:\n    ${psql}\nthen: set search_path = ${config.schema}; and query the tables (\\dt lists them).\n`,
      );
      if (!warehouse.embedded) return;
      if (!options.keepRunning) {
        out(
          `The embedded PostgreSQL (data in ${warehouse.dataDir ?? config.dataDir}) runs while a command runs: \`node bin/insights-sync.js demo --keep-running\` keeps it up.\n`,
        );
        return;
      }
      out('The warehouse stays up until Ctrl+C.\n');
      await new Promise<void>((resolve) => {
        if (shutdown.signal.aborted) resolve();
        shutdown.signal.addEventListener('abort', () => resolve(), { once: true });
      });
    });
  } finally {
    shutdown.dispose();
    await sim.stop();
  }
}

async function runQuery(pool: pg.Pool, text: string): Promise<string> {
  const result = await pool.query<Record<string, string | number | null>>(text);
  const columns = result.fields.map((f) => f.name);
  if (result.rows.length === 0) return '(no rows)';
  return formatTable(
    columns,
    result.rows.map((row) => columns.map((c) => row[c] ?? '')),
    terminalColumns(process.stdout),
  );
}

/** The demo's busy day is truncated on purpose (the simulator caps it): that is shown, not fatal. */
function printRunQuietly(result: Parameters<typeof printRun>[0]): void {
  try {
    printRun(result);
  } catch (error) {
    printProse(`${error instanceof Error ? error.message : String(error)}\n`);
  }
}

function withoutPassword(url: string): string {
  const parsed = new URL(url);
  parsed.password = '';
  return parsed.toString();
}
