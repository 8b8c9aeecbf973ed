import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/**
 * Debian's chromium (apt-get install chromium), driven by playwright-core: no browser download.
 * The flags keep it offline and quiet: no sandbox (CI runs as root), no GPU, and none of the
 * background traffic (updates, sync, QUIC probes) a closed network would only make fail.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

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

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH))
    throw new Error(
      `no browser at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install -y chromium) or set CHROMIUM_PATH`,
    );
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS });
}
