import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Writes a command's output file (`report --out`, `dbt-sources --out`) so that no one else's file
 * is ever written through it: the text goes to a new temporary file in the target's directory,
 * created exclusively (O_EXCL: a link planted under that name is refused, not followed), then
 * renamed over the target. A symlink at the target is replaced by the file, its own target left
 * as it was; a reader never sees half a file. `mode` is the new file's (the report holds
 * visitors' comments: 0600).
 */
export async function writeOutputFile(file: string, text: string, mode: number): Promise<void> {
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
