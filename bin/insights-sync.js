#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so a clone works without a build step.
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { runCli } = await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
process.exitCode = await runCli(process.argv);
