import { afterAll } from 'vitest';

/**
 * Collects the unhandled rejections and uncaught exceptions of this test file's process (vitest
 * would report them too, but after the fact): a test asserts the list is empty at the point it
 * cares about. Listening stops when the file's tests are done.
 */
export function watchUnhandled(): () => string[] {
  const seen: string[] = [];
  const onRejection = (reason: unknown) => {
    seen.push(`unhandled rejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
  };
  const onException = (error: Error) => {
    seen.push(`uncaught exception: ${error.stack ?? error.message}`);
  };
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  afterAll(() => {
    process.off('unhandledRejection', onRejection);
    process.off('uncaughtException', onException);
  });
  return () => [...seen];
}
