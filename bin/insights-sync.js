#!/usr/bin/env node
// The installed command: runs the build (dist/cli/, bundled by `npm run build`, which
// `npm install` and `npm ci` run through the `prepare` script; scripts/bundle-cli.mjs says why
// a bundle). bin/insights-sync-dev.js runs the sources.
import { existsSync } from 'node:fs';
import { launch } from './launch.js';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('insights-sync: the compiled CLI (dist/) is missing: run npm run build\n');
  process.exit(2);
}
await launch(() => import(main.href));
