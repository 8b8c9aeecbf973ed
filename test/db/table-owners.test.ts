import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, test } from 'vitest';

/**
 * A table has one owner in the code: the ledger's tables are queried only in src/ledger/, and
 * pg-boss's private tables only in src/queue/job-table.ts. What the code says, comments aside.
 */
const ROOT = join(import.meta.dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The file's code without its comments (a comment may name a table it does not query). */
function code(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

/** Files of src/ whose code matches (a table named as Kysely or SQL names it), outside the owners. */
function strangers(pattern: RegExp, owners: RegExp): string[] {
  return sourceFiles('src')
    .map((path) => relative(ROOT, join(ROOT, path)))
    .filter((path) => !owners.test(path) && pattern.test(code(path)));
}

describe('who queries which table', () => {
  test('sync_windows and watermarks are queried in src/ledger/ only (src/db/ declares their types)', () => {
    expect(
      strangers(
        /'(sync_windows|watermarks)\b|\b(from|join|update|into)\s+(sync_windows|watermarks)\b/i,
        /^src\/(ledger|db)\//,
      ),
    ).toEqual([]);
  });

  test("pg-boss's job and queue tables are named in src/queue/job-table.ts and in the queue's installer only", () => {
    // The installer (src/db/queue-schema.ts) carries pg-boss 10's waiting jobs over to pg-boss 12.
    expect(strangers(/["'`}]\.(job|queue)\b/, /^src\/(queue\/job-table|db\/queue-schema)\.ts$/)).toEqual([]);
  });
});
