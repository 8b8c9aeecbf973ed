/**
 * `npm run build` (and `prepare`, which `npm ci`, `npm install` and `npm pack` run): tsc's output,
 * package.json beside it, and the bundled CLI (scripts/bundle-cli.mjs), built in dist.next/ and
 * moved into place at the end. A build that replaced dist/ file by file would leave a CLI running
 * from it (a test beside `npm pack`, a user's schedule) without its files for the seconds tsc
 * takes; the two renames leave it without them for microseconds. A failed build leaves dist/ as
 * it was.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const next = path.join(root, 'dist.next');
const old = path.join(root, 'dist.old');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const node = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' });

rmSync(next, { recursive: true, force: true });
node([tsc, '-p', 'tsconfig.build.json', '--outDir', next]);
copyFileSync(path.join(root, 'package.json'), path.join(next, 'package.json'));
node([path.join(root, 'scripts', 'bundle-cli.mjs'), next]);
rmSync(old, { recursive: true, force: true });
if (existsSync(dist)) renameSync(dist, old);
renameSync(next, dist);
rmSync(old, { recursive: true, force: true });
