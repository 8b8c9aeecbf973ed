import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Where a program is: the path a setting names (CHROMIUM_PATH, PROMTOOL_PATH) when it is set, and
 * nothing else then (a user who points at a program means that one); otherwise the first one of
 * that name on PATH, as a shell finds it. `isExecutable` is passed in so that the rule is tested
 * without a file system.
 */
export function findExecutable(
  name: string,
  setting: string | undefined,
  searchPath: string | undefined,
  isExecutable: (file: string) => boolean = isExecutableFile,
): string | undefined {
  if (setting !== undefined && setting !== '') return isExecutable(setting) ? setting : undefined;
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    // An empty PATH entry means the current directory to a shell; a test never wants that.
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
