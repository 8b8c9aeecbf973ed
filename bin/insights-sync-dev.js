#!/usr/bin/env node
// The CLI from its TypeScript sources through tsx, no build needed: what the tests run, so that
// they always test the current code (never a stale dist/). Same launcher as the installed bin.
import { launch } from './launch.js';

await launch(async () => {
  const { register } = await import('tsx/esm/api');
  register();
  return import(new URL('../src/cli/main.ts', import.meta.url).href);
});
