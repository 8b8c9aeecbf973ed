/**
 * Standard output as a command sees it: a write that fails (ENOSPC under `> file` on a full disk,
 * EPIPE, EIO) is reported by the stream as an 'error' event after printOut has returned, and an
 * unheard one ends the process with a stack trace. The CLI listens from its start and asks at
 * its end whether everything written got through.
 */
export interface OutputWatch {
  /** After every write so far was handed to the system: the first failure, or undefined. */
  settled(): Promise<Error | undefined>;
}

export function watchOutput(stream: NodeJS.WriteStream | NodeJS.WritableStream): OutputWatch {
  let failure: Error | undefined;
  stream.on('error', (error: Error) => {
    failure ??= error;
  });
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
  };
}

/**
 * Standard error cannot report its own failure: heard and dropped, so that the exit code, the
 * one thing left to say it, still comes.
 */
export function ignoreFailures(stream: NodeJS.WritableStream): void {
  stream.on('error', () => {});
}
