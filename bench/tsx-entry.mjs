// The reference of bench/startup.ts: the CLI as bin/insights-sync.js ran it before the compiled package and its launcher, the
// TypeScript sources through tsx, every command in this one process, no heap limit.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import(new URL('../src/cli/main.ts', import.meta.url).href);
process.exitCode = await runCli(process.argv);
