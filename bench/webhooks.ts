/**
 * Target 5, the webhook receiver: the real `serve` command in a process of its own, on loopback,
 * against a fresh warehouse; autocannon in this process keeps `connections` keep-alive
 * connections busy with deliveries for `seconds`, each a new feedback or survey body (or, for a
 * share of them, a redelivery of a body already acknowledged). Then the same server answers
 * GET /healthz for `healthSeconds`: the framework's ceiling on this machine. At the end the
 * warehouse is checked: every acknowledged body is an applied delivery with its row, and the
 * stored deliveries count every 200. Between the two, the reference: single-row INSERT + COMMIT
 * statements one after the other on one connection (each a WAL flush), what a receiver storing
 * each delivery alone could reach at best; the delivery rate is shown as a multiple of it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import pg from 'pg';
import { listeningUrl } from './child-process.js';
import { cpuMsOf, sampleBackendCpu, withDescendants } from './cpu.js';
import type { BenchServer } from './database.js';
import type { Benchmark, RunResult } from './figures.js';
import { type LatencyContext, type LatencyRecorder, latencyRecorder, timed } from './latency.js';

export interface WebhookOptions {
  seconds: number;
  healthSeconds: number;
  connections: number;
  /** Share (0..1) of requests that redeliver a body already acknowledged. */
  duplicates: number;
  /** A first, shorter phase with fewer senders, for comparison. */
  fewerConnections?: number;
}

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'bin', 'insights-sync-dev.js');
const TOKEN = 'bench-token-0123456789abcdefghij';
const SOURCE = 'bench';

export const webhooks: Benchmark<WebhookOptions> = {
  name: 'webhooks',
  targets: '5',
  figures: ({ connections, fewerConnections, seconds }) => [
    { key: 'deliveries', label: 'deliveries answered', unit: '', digits: 0 },
    // The absolute rate is shown, not judged: it follows the machine and whatever else runs on it
    // (1,190/s to 3,430/s for the same code). The target is the rate as a multiple of a reference
    // measured in the same minutes, which moves with it.
    {
      key: 'rate',
      label: `deliveries/s, ${connections} connections for ${seconds} s`,
      unit: '/s',
      digits: 0,
    },
    {
      key: 'commitRate',
      label: 'single-row INSERT + COMMIT/s, 1 connection, same run (the reference)',
      unit: '/s',
      digits: 0,
    },
    {
      key: 'commitRatio',
      label: 'deliveries/s / single-row INSERT + COMMIT/s',
      unit: 'x',
      digits: 2,
      target: { text: '≥ 2×', met: (s) => s.median >= 2 },
    },
    { key: 'p50', label: `delivery latency p50, ${connections} connections`, unit: 'ms', digits: 1 },
    {
      key: 'p99',
      label: `delivery latency p99, ${connections} connections`,
      unit: 'ms',
      digits: 1,
      target: { text: '≤ 50 ms', met: (s) => s.median <= 50 },
    },
    {
      key: 'inFlight',
      label: `deliveries in flight (rate × mean latency; at most ${connections}, one a connection)`,
      unit: '',
      digits: 1,
    },
    {
      key: 'non2xx',
      label: 'non-2xx answers and connection errors',
      unit: '',
      digits: 0,
      target: { text: '0 in every run', met: (s) => s.max === 0 },
    },
    {
      key: 'lost',
      label: 'lost: acknowledged, not stored with its row',
      unit: '',
      digits: 0,
      target: { text: '0 in every run', met: (s) => s.max === 0 },
    },
    ...(fewerConnections === undefined
      ? []
      : [
          { key: 'fewerRate', label: `deliveries/s, ${fewerConnections} connections`, unit: '/s', digits: 0 },
          {
            key: 'fewerP50',
            label: `delivery latency p50, ${fewerConnections} connections`,
            unit: 'ms',
            digits: 1,
          },
          {
            key: 'fewerP99',
            label: `delivery latency p99, ${fewerConnections} connections`,
            unit: 'ms',
            digits: 1,
          },
        ]),
    // Where the two cores go, per delivery answered in the measured phase: what a faster receiver
    // must take off, and from whom.
    { key: 'cpuReceiver', label: 'CPU per delivery: the receiver (`serve`)', unit: 'µs', digits: 0 },
    { key: 'cpuPostgres', label: 'CPU per delivery: PostgreSQL', unit: 'µs', digits: 0 },
    { key: 'cpuSender', label: 'CPU per delivery: the sender (autocannon)', unit: 'µs', digits: 0 },
    { key: 'coresBusy', label: 'cores kept busy by the three (of the machine’s)', unit: '', digits: 2 },
    { key: 'healthRate', label: 'GET /healthz/s, same server (framework ceiling)', unit: '/s', digits: 0 },
    { key: 'healthP99', label: 'GET /healthz latency p99', unit: 'ms', digits: 1 },
    { key: 'shareOfCeiling', label: 'deliveries/s / healthz/s', unit: '%', digits: 1 },
  ],
};

function visitor(n: number) {
  return {
    id: `v-${n % 5000}`,
    name: 'Ada',
    company: '',
    email: 'ada@example.test',
    ip: '192.0.2.1',
    user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
    landing_page: 'https://shop.example.test/',
    ref_page: '',
    created_at: '2026-03-01T10:00:00.000Z',
    device: 'desktop',
    browser: 'Firefox',
    os: 'Linux',
  };
}

/** Delivery n: feedback and survey answers alternate; every n is a distinct body. */
export function deliveryBody(n: number): string {
  if (n % 2 === 0) {
    return JSON.stringify({
      id: n,
      feedback_id: 7,
      type: 'feedback',
      question: 'How was your visit?',
      comment: `Checkout was quick (${n})`,
      session: `s-${n}`,
      screenshot: `https://cdn.example.test/${n}.png`,
      visitor: visitor(n),
    });
  }
  return JSON.stringify({
    id: n,
    question_id: 3,
    type: 'survey',
    question: 'What brought you here?',
    answer: `A friend (${n})`,
    session: `s-${n}`,
    visitor: visitor(n),
  });
}

async function startServe(databaseUrl: string): Promise<{ url: string; child: ChildProcess }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('INSIGHTS_') && key !== 'DATABASE_URL' && key !== 'LOG_LEVEL') env[key] = value;
  }
  const child = spawn(process.execPath, [CLI, 'serve'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...env,
      DATABASE_URL: databaseUrl,
      INSIGHTS_API_URL: 'http://api.bench.test',
      INSIGHTS_API_KEY: 'unused-by-serve',
      INSIGHTS_SOURCE_NAME: SOURCE,
      INSIGHTS_WEBHOOK_TOKEN: TOKEN,
      INSIGHTS_WEBHOOK_PORT: '0',
      INSIGHTS_WEBHOOK_HOST: '127.0.0.1',
      // One log line per request at info: an operator's choice, not the receiver's cost.
      LOG_LEVEL: 'warn',
    },
  });
  const url = await listeningUrl(child, /listening on (http:\/\/\S+)/, 'serve');
  return { url, child };
}

async function stopServe(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/**
 * Single-row INSERTs, each its own transaction (autocommit: one round trip and one WAL flush),
 * one after the other on one connection for `seconds`: per second. The table is an ordinary one
 * (a temporary table writes no WAL), in the run's own warehouse.
 */
async function insertCommitRate(url: string, seconds: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('create table bench_commit_reference (n bigint not null)');
    let n = 0;
    const started = performance.now();
    const until = started + seconds * 1000;
    while (performance.now() < until) {
      await client.query('insert into bench_commit_reference (n) values ($1)', [n]);
      n += 1;
    }
    return (n * 1000) / (performance.now() - started);
  } finally {
    await client.end();
  }
}

interface Context extends LatencyContext {
  n?: number;
  duplicate?: boolean;
}

export async function runWebhooks(server: BenchServer, options: WebhookOptions): Promise<RunResult> {
  const warehouse = await server.createDatabase({ max: 2 });
  const serve = await startServe(warehouse.url);
  try {
    const healthLatency = latencyRecorder();
    const health = await autocannon({
      url: serve.url,
      connections: options.connections,
      duration: options.healthSeconds,
      requests: [timed(healthLatency, { method: 'GET', path: '/healthz' })],
    });

    const acknowledged: number[] = [];
    let next = 0;
    let ok = 0;
    const send = (connections: number, seconds: number, recorder: LatencyRecorder) =>
      autocannon({
        url: serve.url,
        connections,
        duration: seconds,
        requests: [
          timed(recorder, {
            method: 'POST',
            path: `/webhooks/${SOURCE}/${TOKEN}`,
            headers: { 'content-type': 'application/json' },
            setupRequest: (request, context: Context) => {
              const duplicate = acknowledged.length > 0 && Math.random() < options.duplicates;
              const n = duplicate
                ? (acknowledged[Math.floor(Math.random() * acknowledged.length)] as number)
                : next++;
              context.n = n;
              context.duplicate = duplicate;
              return { ...request, body: deliveryBody(n) };
            },
            onResponse: (status, _body, context: Context) => {
              if (status !== 200) return;
              ok += 1;
              if (!context.duplicate && context.n !== undefined) acknowledged.push(context.n);
            },
          }),
        ],
      });
    // Fewer senders first (its figures are shown apart), then the measured 30 s.
    const fewerLatency = latencyRecorder();
    const fewer =
      options.fewerConnections === undefined
        ? undefined
        : await send(options.fewerConnections, options.seconds / 2, fewerLatency);
    const commitRate = await insertCommitRate(warehouse.url, options.healthSeconds);
    const backends = sampleBackendCpu(warehouse.name);
    // The launcher starts `serve` again as its child (a heap limit): that child does the work.
    const receiver = withDescendants(serve.child.pid ?? 0);
    const receiverBefore = cpuMsOf(receiver);
    const senderBefore = process.cpuUsage();
    const latency = latencyRecorder();
    const deliveries = await send(options.connections, options.seconds, latency);
    const sender = process.cpuUsage(senderBefore);
    const receiverMs = cpuMsOf(receiver) - receiverBefore;
    const postgres = backends.stop();
    await stopServe(serve.child);
    const perDelivery = (ms: number) => (1000 * ms) / deliveries['2xx'];
    const senderMs = (sender.user + sender.system) / 1000 - postgres.samplerMs;

    // Lost: acknowledged (200), but without its applied delivery or without its row.
    const { rows } = await sql<{ events: number; deliveries: number; items: number; lost: number }>`
      select (select count(*)::int from webhook_events where status = 'applied') as events,
             (select coalesce(sum(delivery_count), 0)::int from webhook_events) as deliveries,
             (select count(*)::int from feedback) + (select count(*)::int from survey_answers) as items,
             -- All acknowledged minus those stored with their row: two EXISTS joined by AND become
             -- hash semi-joins; NOT EXISTS OR NOT EXISTS scanned webhook_events once per
             -- acknowledged delivery (minutes for 100,000 of them).
             cardinality(${acknowledged}::bigint[])
               - (select count(*)::int from unnest(${acknowledged}::bigint[]) as a(n)
                  where exists (select 1 from webhook_events e
                                where e.status = 'applied' and e.body->'id' = to_jsonb(a.n))
                    and exists (select 1 from (select id from feedback
                                               union all select id from survey_answers) as i
                                where i.id = a.n)) as lost`.execute(warehouse.db);
    const stored = rows[0] ?? { events: 0, deliveries: 0, items: 0, lost: Number.NaN };
    const failures: string[] = [];
    const non2xx =
      deliveries.non2xx + deliveries.errors + (fewer === undefined ? 0 : fewer.non2xx + fewer.errors);
    if (non2xx > 0) failures.push(`webhooks: ${non2xx} non-2xx answers and connection errors`);
    if (stored.lost !== 0) failures.push(`webhooks: ${stored.lost} acknowledged deliveries lost`);
    // Requests cut by autocannon's stop may have committed unanswered: at most one per connection.
    const extra = stored.events - acknowledged.length;
    if (extra < 0 || extra > options.connections + (options.fewerConnections ?? 0))
      failures.push(
        `webhooks: ${stored.events} stored deliveries for ${acknowledged.length} distinct acknowledged`,
      );
    if (stored.items !== stored.events)
      failures.push(`webhooks: ${stored.items} feedback and survey rows for ${stored.events} deliveries`);
    if (stored.deliveries < ok)
      failures.push(`webhooks: ${stored.deliveries} deliveries counted, ${ok} answered 200`);

    const rate = deliveries['2xx'] / deliveries.duration;
    const healthRate = health['2xx'] / health.duration;
    const latencies = latency.summary();
    // One request in flight a connection: more says the latencies are not the deliveries'.
    const inFlight = latencies.totalMs / (1000 * deliveries.duration);
    if (inFlight > options.connections * 1.02)
      failures.push(
        `webhooks: latencies add up to ${inFlight.toFixed(1)} requests in flight on ${options.connections} connections`,
      );
    return {
      measures: {
        deliveries: deliveries['2xx'],
        rate,
        p50: latencies.p50Ms,
        p99: latencies.p99Ms,
        inFlight,
        non2xx,
        lost: stored.lost,
        commitRate,
        commitRatio: rate / commitRate,
        healthRate,
        healthP99: healthLatency.summary().p99Ms,
        shareOfCeiling: (100 * rate) / healthRate,
        cpuReceiver: perDelivery(receiverMs),
        cpuPostgres: perDelivery(postgres.cpuMs),
        cpuSender: perDelivery(senderMs),
        coresBusy: (receiverMs + postgres.cpuMs + senderMs) / (1000 * deliveries.duration),
        ...(fewer === undefined
          ? {}
          : {
              fewerRate: fewer['2xx'] / fewer.duration,
              fewerP50: fewerLatency.summary().p50Ms,
              fewerP99: fewerLatency.summary().p99Ms,
            }),
      },
      failures,
    };
  } finally {
    await stopServe(serve.child);
    await warehouse.drop();
  }
}
