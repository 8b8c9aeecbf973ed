/**
 * Standard output as a command sees it: a write that fails (ENOSPC under `> file` on a full disk,
 * EPIPE, EIO) is reported by the stream as an 'error' event after printOut has returned, and an
 * unheard one ends the process with a stack trace. The CLI listens from its start and asks at
 * its end whether everything written got through.
 */
export interface OutputWatch {
  /** After every write so far was handed to the system: the first failure, or undefined. */
  settled(): Promise<Error | undefined>;
  /** Stops listening: a process that runs several commands (the tests) would pile listeners up. */
  stop(): void;
}

export function watchOutput(stream: NodeJS.WriteStream | NodeJS.WritableStream): OutputWatch {
  let failure: Error | undefined;
  const heard = (error: Error) => {
    failure ??= error;
  };
  stream.on('error', heard);
  const writable = stream as NodeJS.WritableStream & { errored?: Error | null; destroyed?: boolean };
  return {
    settled: () =>
      new Promise((resolve) => {
        const seen = () => failure ?? writable.errored ?? undefined;
        // A failed write destroys the stream at once; its 'error' event comes a tick later.
        if (writable.destroyed === true) return resolve(seen());
        // Callbacks run in order: this one after every earlier write succeeded or failed.
        writable.write('', (error) => resolve(seen() ?? error ?? undefined));
      }),
    stop: () => {
      stream.off('error', heard);
    },
  };
}

const ignored = new WeakSet<NodeJS.WritableStream>();

/**
 * Standard error cannot report its own failure: heard and dropped, so that the exit code, the
 * one thing left to say it, still comes. For good (the command's last line may fail after it
 * returned), and once per stream however many commands a process runs.
 */
export function ignoreFailures(stream: NodeJS.WritableStream): void {
  if (ignored.has(stream)) return;
  ignored.add(stream);
  stream.on('error', () => {});
}
