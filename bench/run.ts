/**
 * `npm run bench`: every benchmark against the simulator and a real PostgreSQL (found as the
 * tests find theirs: TEST_DATABASE_URL, else Docker, else an embedded server), 3 runs each,
 * then the results table on stdout and in docs/benchmarks.md.
 *
 *   npm run bench                                   # all, 3 runs, writes docs/benchmarks.md (~30 min on 2 cores)
 *   npm run bench -- --only load,webhooks --runs 5  # some of them, merged into the doc; --no-write leaves it alone
 *   npm run bench:smoke                             # tiny sizes, 1 run, seconds; checks, never times
 *   npm run bench -- --save r.json                  # also keep the measured values
 *   npm run bench -- --render r.json                # the document again from them, nothing measured
 *
 * Writing the document also writes its measured values beside it (docs/benchmarks.json).
 *
 * Exits 1 when a benchmark found a correctness failure (lost deliveries, wrong counts); a target
 * missed is reported, not an error.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openBenchServer } from './database.js';
import { describeMachine, loadAverage } from './machine.js';
import { renderText } from './report.js';
import { mergeSaved, renderSaved, type SavedRun, savedRunOf, valuesPathOf } from './saved.js';
import { BENCHMARK_NAMES, type BenchmarkName, FULL, runSuite, SMOKE } from './suite.js';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

const USAGE = `usage: npm run bench -- [--runs N] [--only ${BENCHMARK_NAMES.join(',')}] [--no-write] [--out FILE] [--save FILE.json] [--render FILE.json]
       npm run bench:smoke

  --runs N         runs of each benchmark (default 3; the document shows their median)
  --only A,B       these benchmarks only, merged into the document
  --no-write       print the table, leave docs/benchmarks.md alone
  --out FILE       write the document there instead (default docs/benchmarks.md)
  --save FILE      also keep the measured values as JSON
  --render FILE    write the document again from saved values, measuring nothing
  --smoke          tiny sizes, one run: checks, never times (what CI runs)

PostgreSQL is found as the tests find it: TEST_DATABASE_URL, else Docker, else an embedded server.
A full run takes about 25 minutes on 2 cores; exits 1 on a correctness failure, 2 on bad arguments.
`;

const ARGUMENTS = {
  help: { type: 'boolean', short: 'h', default: false },
  runs: { type: 'string' },
  only: { type: 'string' },
  smoke: { type: 'boolean', default: false },
  'no-write': { type: 'boolean', default: false },
  out: { type: 'string', default: 'docs/benchmarks.md' },
  // The measured values as JSON; --render writes the document from such a file again (after
  // the prose in bench/report.ts changed, say) without measuring anything.
  save: { type: 'string' },
  render: { type: 'string' },
} as const;

function parseArguments() {
  try {
    return parseArgs({ options: ARGUMENTS }).values;
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

const values = parseArguments();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const smoke = values.smoke;
const runs = Number(values.runs ?? (smoke ? 1 : 3));
const only = (values.only?.split(',').map((s) => s.trim()) ?? [...BENCHMARK_NAMES]) as BenchmarkName[];
const unknown = only.filter((name) => !BENCHMARK_NAMES.includes(name));
if (unknown.length > 0 || !Number.isInteger(runs) || runs < 1) {
  process.stderr.write(
    `bench: ${unknown.length > 0 ? `no benchmark named ${unknown.join(', ')}` : '--runs takes a whole number from 1'}\n\n${USAGE}`,
  );
  process.exit(2);
}
const write = !smoke && !values['no-write'];
// As typed, less what does not change the measurement (--smoke is in the script's name, --save).
const shownArgs = process.argv
  .slice(2)
  .filter((arg, i, all) => arg !== '--smoke' && !arg.startsWith('--save') && all[i - 1] !== '--save');
const command = `npm run ${smoke ? 'bench:smoke' : 'bench'}${shownArgs.length > 0 ? ` -- ${shownArgs.join(' ')}` : ''}`;

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

async function readSavedIfAny(file: string): Promise<SavedRun | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as SavedRun;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

if (values.render !== undefined) {
  const saved = JSON.parse(await readFile(values.render, 'utf8')) as SavedRun;
  await writeFile(path.resolve(ROOT, values.out), renderSaved(saved));
  log(`wrote ${values.out} from ${values.render}`);
  process.exit(0);
}

const startLoad = loadAverage();
const date = new Date();
log(`load average at start: ${startLoad.toFixed(2)}`);
const server = await openBenchServer();
try {
  const machine = await describeMachine(server);
  log(`PostgreSQL (${machine.databaseKind}): ${machine.postgres}`);
  const result = await runSuite(server, smoke ? SMOKE : FULL, { only, runs, log });
  process.stdout.write(`${renderText(result)}\n`);
  const saved = savedRunOf({ result, machine, date, command, startLoad, runs, only });
  if (values.save !== undefined) await writeFile(values.save, JSON.stringify(saved, null, 1));
  if (write) {
    // The values go beside the document: a test renders it again from them, so no figure in it
    // can be edited by hand. Some benchmarks measured again are merged into the document's values,
    // their sections marked with this run's command and date.
    const out = path.resolve(ROOT, values.out);
    const whole = only.length === BENCHMARK_NAMES.length;
    const earlier = whole ? undefined : await readSavedIfAny(valuesPathOf(out));
    const json = `${JSON.stringify(earlier === undefined ? saved : mergeSaved(earlier, saved), null, 1)}\n`;
    await writeFile(out, renderSaved(JSON.parse(json) as SavedRun));
    await writeFile(valuesPathOf(out), json);
    log(`wrote ${values.out} and ${path.relative(ROOT, valuesPathOf(out))}`);
  }
  log(`done in ${(result.seconds / 60).toFixed(1)} min`);
  if (result.failures.length > 0) {
    process.stderr.write(`\ncorrectness failures:\n${result.failures.map((f) => `- ${f}`).join('\n')}\n`);
    process.exitCode = 1;
  }
} finally {
  await server.stop();
}
