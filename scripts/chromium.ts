import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { type Browser, chromium } from 'playwright-core';
import { findExecutable } from './find-executable.js';

/**
 * A Chromium for playwright-core, without a browser download at run time, found in this order:
 * 1. CHROMIUM_PATH when set (and then nothing else);
 * 2. `chromium` on PATH: Debian's package (apt-get install chromium), what CI installs;
 * 3. the npm package @sparticuz/chromium when it is installed: a headless Chromium shipped
 *    compressed inside the package, with the NSS libraries it links, so that it runs on a
 *    machine with no browser packages at all. It is unpacked once into node_modules/.cache.
 */
export type ChromiumInstall =
  | { source: 'path'; executable: string }
  | { source: 'npm package'; executable: string; version: string; env: Record<string, string> };

export const CHROMIUM_INSTALL = 'apt-get install -y chromium, or set CHROMIUM_PATH';

/**
 * The flags keep it offline and quiet: no sandbox (CI runs as root), no GPU, and none of the
 * background traffic (updates, sync, QUIC probes) a closed network would only make fail.
 */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The package's build is for Linux on x86-64 only (its Lambda target). */
const BUNDLE_PLATFORM = 'linux-x64';

/**
 * Which of the three to use, decided without touching the package: the path of one found, the
 * package (when it exists, it is unpacked by findChromium), or none. `isExecutable` is passed in
 * so that the order is tested without a file system.
 */
export function chooseChromium(
  env: NodeJS.ProcessEnv,
  platform: string,
  isExecutable?: (file: string) => boolean,
): { use: 'path'; executable: string } | { use: 'npm package' } | { use: 'none' } {
  const found = findExecutable('chromium', env.CHROMIUM_PATH, env.PATH, isExecutable);
  if (found !== undefined) return { use: 'path', executable: found };
  // A CHROMIUM_PATH that names nothing is a mistake to report, not a reason to look elsewhere.
  if (env.CHROMIUM_PATH) return { use: 'none' };
  return platform === BUNDLE_PLATFORM ? { use: 'npm package' } : { use: 'none' };
}

export async function findChromium(
  env: NodeJS.ProcessEnv = process.env,
): Promise<ChromiumInstall | undefined> {
  const choice = chooseChromium(env, `${process.platform}-${process.arch}`);
  if (choice.use === 'path') return { source: 'path', executable: choice.executable };
  return choice.use === 'npm package' ? bundledChromium() : undefined;
}

export async function launchChromium(install?: ChromiumInstall): Promise<Browser> {
  const found = install ?? (await findChromium());
  if (found === undefined) throw new Error(`no chromium found: ${CHROMIUM_INSTALL}`);
  return chromium.launch({
    executablePath: found.executable,
    args: ARGS,
    ...(found.source === 'npm package' ? { env: { ...process.env, ...found.env } } : {}),
  });
}

/** The package's entry point, or undefined when it is not installed (it is an optional fallback). */
function resolvePackage(): string | undefined {
  try {
    return createRequire(import.meta.url).resolve('@sparticuz/chromium');
  } catch {
    return undefined;
  }
}

/**
 * Unpacks the package's browser (once per version) into node_modules/.cache. The package unpacks
 * into the OS temporary directory; a child process with TMPDIR set to a fresh directory keeps
 * this process's environment untouched, and the rename makes a half-written unpack (a killed
 * run) or a concurrent one never the one used.
 */
async function bundledChromium(): Promise<ChromiumInstall | undefined> {
  const entry = resolvePackage();
  if (entry === undefined) return undefined;
  const root = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {
    version: string;
  };
  const dir = path.resolve(root, '../../.cache', `sparticuz-chromium-${version}`);
  if (!existsSync(path.join(dir, 'chromium'))) await unpack(entry, root, dir);
  return {
    source: 'npm package',
    executable: path.join(dir, 'chromium'),
    version,
    env: { LD_LIBRARY_PATH: path.join(dir, 'al2023', 'lib'), FONTCONFIG_FILE: path.join(dir, 'fonts.conf') },
  };
}

async function unpack(entry: string, root: string, dir: string): Promise<void> {
  const partial = `${dir}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  try {
    // The browser, its fonts and SwiftShader, then the NSS libraries it links (which the package
    // itself adds only on Amazon Linux: Debian may lack them).
    const script = `const m = await import(${JSON.stringify(pathToFileURL(entry).href)});
      await m.default.executablePath();
      await m.inflate(${JSON.stringify(path.join(root, 'bin', 'al2023.tar.br'))});`;
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, TMPDIR: partial },
    });
    // Its own fonts.conf names /tmp/fonts; this one names where the fonts are.
    await writeFile(
      path.join(partial, 'fonts.conf'),
      `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${path.join(dir, 'fonts')}</dir>\n  <cachedir>${path.join(dir, 'fonts-cache')}</cachedir>\n</fontconfig>\n`,
    );
    await rename(partial, dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another process unpacked the same version first: use that one.
      if (!existsSync(path.join(dir, 'chromium'))) throw error;
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}
