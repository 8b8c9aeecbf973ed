import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findExecutable, isExecutableFile } from '../../scripts/find-executable.js';

describe('findExecutable', () => {
  const files = new Set(['/usr/bin/promtool', '/opt/bin/promtool', '/home/me/promtool']);
  const exists = (file: string) => files.has(file);

  it('takes the first of that name on PATH, as a shell does', () => {
    expect(findExecutable('promtool', undefined, '/bin:/opt/bin:/usr/bin', exists)).toBe('/opt/bin/promtool');
    expect(findExecutable('promtool', undefined, '/bin', exists)).toBeUndefined();
    expect(findExecutable('promtool', undefined, undefined, exists)).toBeUndefined();
  });

  it('never looks in the current directory for an empty PATH entry', () => {
    expect(findExecutable('promtool', undefined, '::', (file) => file === 'promtool')).toBeUndefined();
  });

  it('takes the setting when it is set, and then nothing else: a wrong path is missing, not PATH', () => {
    expect(findExecutable('promtool', '/home/me/promtool', '/usr/bin', exists)).toBe('/home/me/promtool');
    expect(findExecutable('promtool', '/nonexistent', '/usr/bin', exists)).toBeUndefined();
    expect(findExecutable('promtool', '', '/usr/bin', exists)).toBe('/usr/bin/promtool');
  });

  it('counts only executable files', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'find-executable-'));
    try {
      await writeFile(path.join(dir, 'plain'), 'x', { mode: 0o644 });
      await writeFile(path.join(dir, 'program'), '#!/bin/sh\n', { mode: 0o755 });
      expect(isExecutableFile(path.join(dir, 'plain'))).toBe(false);
      expect(isExecutableFile(path.join(dir, 'program'))).toBe(true);
      expect(isExecutableFile(dir)).toBe(false);
      expect(isExecutableFile(path.join(dir, 'absent'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
