// Shared by both entries (bin/insights-sync.js: the build; bin/insights-sync-dev.js: the sources
// through tsx): what runs before the CLI's own code. Plain JavaScript, so it is never stale.
//
// Long runs get a heap limit. V8 sizes its heap from the machine's memory and collects lazily:
// a 1 M item backfill peaked at 368 MB RSS with no limit and stays flat with one (docs/benchmarks.md).
// The limit can only be set when node starts (v8.setFlagsFromString is too late for the heap), so
// for these commands this process starts the CLI again as a child with --max-old-space-size and
// only relays: stdio inherited, signals forwarded, the child's exit code (or signal) returned.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/** The oldest Node.js this runs on (package.json engines): the oldest release of the LTS lines still supported. */
export const MIN_NODE = [22, 12];
/** Exit code of a configuration error (README "Exit codes"). */
const CONFIGURATION_ERROR = 2;

/**
 * The line that refuses a Node.js older than MIN_NODE, or undefined when `version` will do. Checked
 * before the CLI loads: on an older Node its dependencies fail with errors that do not say why.
 * @param {string} version process.version, e.g. v20.19.0
 * @returns {string | undefined}
 */
export function nodeVersionProblem(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  const [minMajor, minMinor] = MIN_NODE;
  if (major > minMajor || (major === minMajor && minor >= minMinor)) return undefined;
  return `insights-sync: needs Node.js ${minMajor}.${minMinor} or later, and this is Node.js ${version.replace(/^v/, '')}: install Node.js 24 (the active LTS) from nodejs.org or your package manager`;
}

/** The commands that run long enough, and over enough data, to need a bound. */
export const LONG_RUNS = new Set(['sync', 'backfill', 'schedule', 'serve', 'worker']);
/**
 * --max-old-space-size of a long run unless INSIGHTS_MAX_HEAP_MB or NODE_OPTIONS says otherwise.
 * Measured on bench/memory.ts's backfill of 100,000 items (its peak is flat from there to 1 M):
 * 128 with V8's default young generation peaked at 240 MB RSS, 128 with 4 MB semi-spaces at
 * 206 MB, 96 with them at 186 MB (the target is 200 MB).
 */
export const DEFAULT_HEAP_MB = 96;
/**
 * V8's young generation is three semi-spaces of up to 16 MB: 48 MB of RSS on top of the old space
 * for objects that live one window at most. 4 MB ones cost no measurable time here.
 */
export const SEMI_SPACE_MB = 4;
/**
 * `serve` allocates a few kB of short-lived objects per delivery (the request, the parsed body,
 * the answer): at thousands of deliveries/s 4 MB semi-spaces made the scavenger run many times
 * a second. Its young generation costs RSS only while it fills, and the receiver holds little
 * else (its queue is bounded, src/webhooks/delivery-batcher.ts).
 */
export const SERVE_SEMI_SPACE_MB = 16;
/**
 * glibc's malloc arenas for the child, unless the environment sets MALLOC_ARENA_MAX: by default
 * each thread that allocates (V8's compiler and collector threads, libuv's pool) may get one of
 * its own, and their pages stay resident. Two cut a 50,000-item backfill's peak RSS on Node 24
 * from 203 to 178 MB (bench/memory.ts's backfill, --max-old-space-size=96), at no measured cost in
 * time; Node 22 peaked at 151 MB with glibc's default. No effect under other C libraries (musl).
 */
export const MALLOC_ARENAS = '2';
/**
 * glibc's mmap threshold for the child, in bytes, unless the environment sets
 * MALLOC_MMAP_THRESHOLD_: blocks this large get pages of their own, returned to the system when
 * freed. 128 kB is glibc's own starting value; setting it keeps it there. Left alone, glibc raises
 * it to the size of each such block freed (up to 32 MB), so after the first large answer the next
 * ones (a busy day's bodies and buffers, MBs each) come from its heap, whose freed pages stay
 * resident. Fixed, a busy site's backfill peaked at 223-226 MB instead of 254-266, the installed
 * backfill of bench/startup.ts at 191-205 instead of 222-238 (3 runs each), for about 4% more time
 * on the busy site (the pages of each large block are faulted in afresh). No effect under other C
 * libraries (musl).
 */
export const MALLOC_MMAP_THRESHOLD = String(128 * 1024);
export const MIN_HEAP_MB = 64;
export const MAX_HEAP_MB = 65_536;
/** Set in the child's environment, removed by the child at once: it relays signals to its parent. */
const CHILD_MARK = 'INSIGHTS_SYNC_RELAYED';
const RELAYED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** How long a signal's arrival in the child may trail its arrival here (Ctrl+C reaches both). */
const SIGNAL_ECHO_MS = 50;

/**
 * INSIGHTS_MAX_HEAP_MB as a number of MB, 0 for "no limit" (V8's own sizing), or undefined when it
 * is not a valid value (then no limit is set here, and the CLI's configuration check refuses it).
 * @param {string | undefined} value
 * @returns {number | undefined}
 */
export function parseHeapSetting(value) {
  if (value === undefined || value.trim() === '') return DEFAULT_HEAP_MB;
  if (!/^\d{1,6}$/.test(value.trim())) return undefined;
  const mb = Number(value.trim());
  if (mb === 0) return 0;
  return mb >= MIN_HEAP_MB && mb <= MAX_HEAP_MB ? mb : undefined;
}

/**
 * The heap limit to start this command with, or undefined to run it in this process as it is.
 * @param {string[]} argv process.argv
 * @param {Record<string, string | undefined>} env
 * @param {string[]} execArgv
 * @returns {number | undefined}
 */
export function heapLimitFor(argv, env, execArgv) {
  if (!boundedRun(argv)) return undefined;
  // A limit the user gave node wins, whichever way they gave it.
  if (givenToNode(OLD_SPACE_FLAG, env, execArgv)) return undefined;
  const mb = parseHeapSetting(env.INSIGHTS_MAX_HEAP_MB);
  return mb === undefined || mb === 0 ? undefined : mb;
}

const OLD_SPACE_FLAG = /--max[-_]old[-_]space[-_]size/;
const SEMI_SPACE_FLAG = /--max[-_]semi[-_]space[-_]size/;

/**
 * Whether node was given a flag, on its command line or in NODE_OPTIONS.
 * @param {RegExp} flag
 * @param {Record<string, string | undefined>} env
 * @param {string[]} execArgv
 */
function givenToNode(flag, env, execArgv) {
  return execArgv.some((arg) => flag.test(arg)) || flag.test(env.NODE_OPTIONS ?? '');
}

/**
 * A long run, not its --help.
 * @param {string[]} argv process.argv
 */
function boundedRun(argv) {
  const args = argv.slice(2);
  const command = args.find((arg) => !arg.startsWith('-'));
  if (command === undefined || !LONG_RUNS.has(command)) return false;
  return !args.includes('--help') && !args.includes('-h');
}

/**
 * The flags to start this command again with, or undefined to run it in this process as it is:
 * the heap limit (heapLimitFor) and small semi-spaces. Where the user gave node a heap limit of
 * their own, it stands and only the semi-spaces are bounded, unless they sized those too: beside a
 * limit given alone, Node 24's V8 grows the young generation to three 64 MB semi-spaces, and a
 * backfill under NODE_OPTIONS=--max-old-space-size=128 peaked at 359 MB RSS (Node 22: 212 MB).
 * @param {string[]} argv process.argv
 * @param {Record<string, string | undefined>} env
 * @param {string[]} execArgv
 * @returns {string[] | undefined}
 */
export function relaunchFlags(argv, env, execArgv) {
  if (!boundedRun(argv)) return undefined;
  const semiSpace = `--max-semi-space-size=${semiSpaceFor(argv)}`;
  if (givenToNode(OLD_SPACE_FLAG, env, execArgv))
    return givenToNode(SEMI_SPACE_FLAG, env, execArgv) ? undefined : [semiSpace];
  const mb = heapLimitFor(argv, env, execArgv);
  return mb === undefined ? undefined : [`--max-old-space-size=${mb}`, semiSpace];
}

/**
 * --max-semi-space-size of the command of `argv` (process.argv), started with a heap limit.
 * @param {string[]} argv
 * @returns {number}
 */
export function semiSpaceFor(argv) {
  const command = argv.slice(2).find((arg) => !arg.startsWith('-'));
  return command === 'serve' ? SERVE_SEMI_SPACE_MB : SEMI_SPACE_MB;
}

/**
 * Runs the CLI: in this process, or in a child with a heap limit (see above).
 * @param {() => Promise<{ runCli: (argv: string[]) => Promise<number> }>} loadCli
 */
export async function launch(loadCli) {
  const tooOld = nodeVersionProblem(process.version);
  if (tooOld !== undefined) {
    process.stderr.write(`${tooOld}\n`);
    process.exit(CONFIGURATION_ERROR);
  }
  // The child started with the flags: it runs the CLI, whatever they say.
  if (process.env[CHILD_MARK] === '1') {
    delete process.env[CHILD_MARK];
    reportToParent();
  } else {
    const flags = relaunchFlags(process.argv, process.env, process.execArgv);
    if (flags !== undefined) {
      relayTo(flags, heapLimitFor(process.argv, process.env, process.execArgv));
      return;
    }
  }
  const { runCli } = await loadCli();
  process.exitCode = await runCli(process.argv);
}

/**
 * @param {string[]} flags node's flags for the child (relaunchFlags)
 * @param {number | undefined} heapMb the limit set here; undefined: the user's own stands
 */
function relayTo(flags, heapMb) {
  const child = spawn(process.execPath, [...process.execArgv, ...flags, ...process.argv.slice(1)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: {
      MALLOC_ARENA_MAX: MALLOC_ARENAS,
      MALLOC_MMAP_THRESHOLD_: MALLOC_MMAP_THRESHOLD,
      ...process.env,
      [CHILD_MARK]: '1',
    },
  });
  /** @type {Map<string, number>} when the child last said it received each signal */
  const seenByChild = new Map();
  child.on('message', (message) => {
    if (message && typeof message === 'object' && typeof message.signal === 'string')
      seenByChild.set(message.signal, Date.now());
  });
  // Ctrl+C signals the whole foreground process group, the child included: forwarding it again
  // would be a second signal, which means "stop at once" to the CLI. So a signal is forwarded
  // only when the child has not reported the same one by itself (kill <pid>, docker stop).
  const forward = (/** @type {NodeJS.Signals} */ signal) => {
    const at = Date.now();
    const echoed = () => (seenByChild.get(signal) ?? 0) >= at - SIGNAL_ECHO_MS;
    setTimeout(() => {
      if (!echoed() && child.exitCode === null && child.signalCode === null) child.kill(signal);
    }, SIGNAL_ECHO_MS);
  };
  for (const signal of RELAYED_SIGNALS) process.on(signal, forward);
  child.on('error', (error) => {
    process.stderr.write(`insights-sync: could not start node: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    if (signal === 'SIGABRT' || signal === 'SIGTRAP')
      // V8 aborts the process when the heap is full; its own message is above this line.
      process.stderr.write(
        `insights-sync: the process ended with ${signal}; if it ran out of memory, ${heapMb === undefined ? 'raise the --max-old-space-size given to node' : `raise INSIGHTS_MAX_HEAP_MB (now ${heapMb})`}\n`,
      );
    for (const relayed of RELAYED_SIGNALS) process.removeAllListeners(relayed);
    // End the way the child ended, so that a shell or supervisor sees the same.
    if (signal === 'SIGABRT' || signal === 'SIGTRAP') process.exit(128 + constants.signals[signal]);
    process.kill(process.pid, signal);
  });
}

/**
 * In the child: tell the parent which signals arrived (so it does not forward them a second time),
 * and end with it: if the parent is killed (SIGKILL), the child must not run on unseen.
 */
function reportToParent() {
  const channel = process.channel;
  if (channel === undefined) return;
  channel.unref();
  process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));
  for (const signal of RELAYED_SIGNALS) {
    const report = () => {
      if (process.connected) process.send?.({ signal });
      // Alone, this listener would swallow the signal: do what node does without one.
      if (process.listenerCount(signal) === 1) {
        process.off(signal, report);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, report);
  }
}
