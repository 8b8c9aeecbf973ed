import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes a command's output file (`report --out`, `dbt-sources --out`) so that no one else's file
 * is ever written through it: the text goes to a new temporary file in the target's directory,
 * created exclusively (O_EXCL: a link planted under that name is refused, not followed), then
 * renamed over the target. A symlink at the target is replaced by the file, its own target left
 * as it was; a reader never sees half a file. `mode` is the new file's (the report holds
 * visitors' comments: 0600).
 *
 * A device or a named pipe at the target (`/dev/stdout`, `/dev/full`, a FIFO a script reads) is
 * written into instead: replacing it would destroy it (root may rename over /dev/full), and
 * there is no half-written file to hide.
 */
export async function writeOutputFile(file: string, text: string, mode: number): Promise<void> {
  if (await writtenToDevice(file, text)) return;
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
  try {
    await writeFile(temporary, text, { mode, flag: 'wx' });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true }).catch(() => {});
    throw error;
  }
}

/**
 * Whether `file` is a character device or a FIFO, now written with `text`. Opened without
 * creating (r+), then the opened file itself is asked what it is, so a file swapped in between is
 * never written through this path. O_NONBLOCK: a FIFO nobody reads fails (ENXIO) instead of
 * hanging; no other file waits on open.
 */
async function writtenToDevice(file: string, text: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    // Absent, a symlink (ELOOP), a directory, a FIFO with no reader: the rename path decides.
    const code = (error as { code?: unknown }).code;
    if (code === 'ENXIO') throw error;
    return false;
  }
  try {
    const stat = await handle.stat();
    if (!stat.isCharacterDevice() && !stat.isFIFO()) return false;
    await handle.writeFile(text);
    return true;
  } finally {
    await handle.close();
  }
}
