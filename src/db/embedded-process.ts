import { type ChildProcess, spawn } from 'node:child_process';
import { EmbeddedPostgresError } from './embedded-binaries.js';

/**
 * Runs initdb and starts postgres, as the `postgres` user when `runAs` is given (PostgreSQL
 * refuses to run as root). Every way a program can fail to start (not executable, missing, its
 * directory out of the user's reach) becomes an EmbeddedPostgresError: one line, never an
 * unhandled 'error' event.
 */

/** uid and gid the programs run as; undefined: as this process. */
export type RunAs = { uid: number; gid: number } | undefined;

/** Server messages in English whatever the machine's locale: startup is recognised by one of them. */
const MESSAGES_LOCALE = 'C';
const READY = 'database system is ready to accept connections';

/** Why `program` could not be started, and what to do about it. */
export function spawnFailure(program: string, error: NodeJS.ErrnoException, runAs: RunAs): string {
  const code = error.code ?? error.message;
  const why =
    code === 'ENOENT'
      ? 'it is missing: run npm install again'
      : code === 'EACCES' && runAs !== undefined
        ? `the postgres user (uid ${runAs.uid}) may not execute it or reach its directory`
        : code === 'EACCES'
          ? 'it is not executable'
          : error.message;
  return `cannot run ${program} (${code}): ${why}`;
}

/** Spawns `program`, turning a failure to start into EmbeddedPostgresError; `onLog` gets its output. */
function launch(program: string, args: string[], runAs: RunAs, onLog: (text: string) => void) {
  const child = spawn(program, args, {
    ...(runAs ?? {}),
    env: { ...process.env, LC_MESSAGES: MESSAGES_LOCALE },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => onLog(chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => onLog(chunk.toString('utf8')));
  const failed = new Promise<never>((_, reject) => {
    // `on`, not `once`: a later 'error' (a failed signal) must not become an unhandled one either.
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(new EmbeddedPostgresError(spawnFailure(program, error, runAs), { cause: error })),
    );
  });
  // Only one of failed / exited settles the caller's race; the other must not be unhandled.
  failed.catch(() => {});
  return { child, failed };
}

/** Runs initdb to its end; rejects with its exit code (its output went to `onLog`). */
export async function runInitdb(
  initdb: string,
  args: string[],
  runAs: RunAs,
  onLog: (text: string) => void,
): Promise<void> {
  const { child, failed } = launch(initdb, [...args, `--lc-messages=${MESSAGES_LOCALE}`], runAs, onLog);
  const exited = new Promise<void>((resolve, reject) => {
    child.once('close', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`initdb exited with ${code === null ? `signal ${signal}` : `code ${code}`}`));
    });
  });
  await Promise.race([failed, exited]);
}

/**
 * Starts the server and resolves once it accepts connections; rejects if it cannot start or exits
 * first. Its output keeps going to `onLog` for its lifetime (an unread pipe would block its logging).
 */
export async function startPostmaster(
  postgres: string,
  args: string[],
  runAs: RunAs,
  onLog: (text: string) => void,
): Promise<ChildProcess> {
  let seen = '';
  let ready: () => void = () => {};
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const { child, failed } = launch(postgres, args, runAs, (text) => {
    onLog(text);
    // A message may arrive split across chunks: look at the end of what came before too.
    seen = (seen + text).slice(-2 * READY.length);
    if (seen.includes(READY)) ready();
  });
  const exited = new Promise<never>((_, reject) => {
    child.once('close', (code, signal) => {
      reject(new Error(`postgres exited with ${code === null ? `signal ${signal}` : `code ${code}`}`));
    });
  });
  exited.catch(() => {});
  await Promise.race([failed, exited, isReady]);
  return child;
}
