#!/usr/bin/env node
// Re-adds to package-lock.json the optional, platform-specific packages (biome, rollup, ... builds
// for other systems) that `npm install` leaves out when the registry it talks to lacks them:
// without them `npm ci` refuses the lock ("Missing: ... from lock file"). Run it after changing
// dependencies: `node .ci/complete-lock.mjs`. It asks the registry for each package's os/cpu and
// falls back to reading them off the package name.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
// Every optional dependency some locked package asks for but the lock lacks.
const missing = [];
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path}/node_modules/${name}`;
    if (!lock.packages[`node_modules/${name}`] && !lock.packages[nested]) missing.push({ name, version, parent: path });
  }
}
for (const { name, version, parent } of missing) {
  let meta;
  try {
    meta = JSON.parse(execFileSync('npm', ['view', `${name}@${version}`, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  } catch {
    // Not on this registry: os and cpu from the package's name (they follow one pattern).
    const m = /-(android|darwin|linux|win32|freebsd|openbsd|openharmony)-([a-z0-9]+)(?:-(gnu|musl|msvc|gnueabihf|musleabihf|eabi))?$/.exec(name);
    if (!m) throw new Error(`cannot infer platform of ${name}`);
    meta = { version, os: [m[1]], cpu: [m[2]], ...(m[3] === 'musl' || m[3] === 'musleabihf' ? { libc: ['musl'] } : m[3] === 'gnu' || m[3] === 'gnueabihf' ? { libc: ['glibc'] } : {}), license: 'MIT' };
    console.log('inferred', name);
  }
  const entry = { version: meta.version };
  if (meta.cpu) entry.cpu = meta.cpu;
  if (meta.os) entry.os = meta.os;
  if (meta.libc) entry.libc = meta.libc;
  if (meta.license) entry.license = meta.license;
  if (meta.engines) entry.engines = meta.engines;
  entry.optional = true;
  if (meta.dist?.integrity) entry.integrity = meta.dist.integrity;
  if (lock.packages[parent]?.dev) entry.dev = true;
  lock.packages[`node_modules/${name}`] = entry;
  console.log(name, meta.version, entry.os, entry.cpu);
}
const sorted = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
lock.packages = sorted;
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
