import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { Kysely, PostgresDialect } from 'kysely';
import { PostgresDialect as CodegenPostgresDialect, type GenerateOptions, generate } from 'kysely-codegen';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { bookkeepingSchema } from '../../src/db/bookkeeping.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * src/db/database.ts is written by hand; the migrations are the truth. This test generates the
 * types of the migrated schema with kysely-codegen and lets the TypeScript compiler compare them
 * with the Database interface: same tables, same columns, same read types and nullability, and
 * the same columns required on insert (no default <-> not Generated).
 *
 * Codegen is told our type-parser decisions (connection.ts): int8 and numeric read as number,
 * date as a 'YYYY-MM-DD' string, jsonb as ColumnType<unknown, string, string> (tables/common.ts).
 * A text column may be narrowed to a union of string literals (values fixed by a CHECK).
 */

const root = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

const CHECKS = `import type { Insertable, SelectType } from 'kysely';
import type { Database } from '../../src/db/database.js';
import type { DB } from './generated-db.js';

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** jsonb reads as unknown, which swallows null: then nullability is read from the column type. */
type Nullable<C> = unknown extends SelectType<C> ? (null extends C ? true : false) : null extends SelectType<C> ? true : false;
type Read<C> = Exclude<SelectType<C>, null>;
type ColumnMatches<Ours, Generated> = Same<Nullable<Ours>, Nullable<Generated>> extends false
  ? false
  : Same<Read<Ours>, Read<Generated>> extends true
    ? true
    : Same<Read<Generated>, string> extends true
      ? [Read<Ours>] extends [string] ? true : false
      : false;
type RequiredKeys<R> = { [K in keyof R]-?: {} extends Pick<R, K> ? never : K }[keyof R];
type Common = keyof Database & keyof DB;
/** "table.column", as the compiler error shows it. */
type Dot<T, C> = \`\${T & string}.\${C & string}\`;

declare function none<T extends never>(): void;
`;

/** Each line must compile; a compiler error on it names the tables or columns that differ. */
const ASSERTIONS: Record<string, string> = {
  'tables only in the Database interface': 'none<Exclude<keyof Database, keyof DB>>();',
  'tables only in the migrations': 'none<Exclude<keyof DB, keyof Database>>();',
  'columns only in the Database interface':
    'none<{ [T in Common]: Dot<T, Exclude<keyof Database[T], keyof DB[T]>> }[Common]>();',
  'columns only in the migrations':
    'none<{ [T in Common]: Dot<T, Exclude<keyof DB[T], keyof Database[T]>> }[Common]>();',
  'columns whose read type or nullability differs':
    'none<{ [T in Common]: Dot<T, { [C in keyof Database[T] & keyof DB[T]]-?: ColumnMatches<Database[T][C], DB[T][C]> extends true ? never : C }[keyof Database[T] & keyof DB[T]]> }[Common]>();',
  'columns required on insert by the Database interface only (in SQL: a default, or nullable)':
    'none<{ [T in Common]: Dot<T, Exclude<RequiredKeys<Insertable<Database[T]>>, RequiredKeys<Insertable<DB[T]>>>> }[Common]>();',
  'columns required on insert by the migrations only (in SQL: not null, no default)':
    'none<{ [T in Common]: Dot<T, Exclude<RequiredKeys<Insertable<DB[T]>>, RequiredKeys<Insertable<Database[T]>>>> }[Common]>();',
};

let t: TestDatabase;
let dir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  await fs.mkdir(path.join(root, 'test-output'), { recursive: true });
  // Inside the repository, so the check resolves `kysely` and src/ like the code it checks.
  dir = await fs.mkdtemp(path.join(root, 'test-output', 'db-types-'));
});

afterAll(async () => {
  await t.drop();
  await fs.rm(dir, { recursive: true, force: true });
});

test('the Database interface matches the migrated schema', async () => {
  const db = new Kysely<Record<string, never>>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: t.url, max: 1 }) }),
  });
  let generated: string;
  try {
    generated = await generate({
      // kysely-codegen is CommonJS and types `db` with kysely's CommonJS declarations, whose
      // private members TypeScript will not equate with the ESM ones; at runtime they agree.
      db: db as unknown as GenerateOptions['db'],
      dialect: new CodegenPostgresDialect({
        dateParser: 'string',
        numericParser: 'number',
        defaultSchemas: [t.schema, bookkeepingSchema(t.schema)],
      }),
      // The data schema and the bookkeeping schema: the code names both unqualified.
      defaultSchemas: [t.schema, bookkeepingSchema(t.schema)],
      includePattern: `{${t.schema},${bookkeepingSchema(t.schema)}}.*`,
      // The migrator's own bookkeeping is not part of the warehouse.
      excludePattern: `${bookkeepingSchema(t.schema)}.kysely_migration*`,
      typeMapping: { int8: 'number', jsonb: 'ColumnType<unknown, string, string>' },
      outFile: null,
    });
  } finally {
    await db.destroy();
  }
  expect(generated).toMatch(/^export interface DB \{$/m);

  const lines = Object.entries(ASSERTIONS);
  const header = CHECKS.split('\n').length;
  await fs.writeFile(path.join(dir, 'generated-db.ts'), generated);
  await fs.writeFile(path.join(dir, 'check.ts'), `${CHECKS}\n${lines.map(([, line]) => line).join('\n')}\n`);
  await fs.writeFile(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      extends: '../../tsconfig.json',
      compilerOptions: { noEmit: true, noErrorTruncation: true },
      include: ['check.ts'],
    }),
  );

  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const output = await run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], {
    cwd: root,
  }).then(
    (result) => result.stdout,
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
  // check.ts(LINE,COL): error TS2344: Type '"feedback.rating"' does not satisfy the constraint 'never'.
  const problems = output
    .split('\n')
    .filter((line) => line.includes('error TS'))
    .map((line) => {
      const match = /check\.ts\((\d+),\d+\): error TS\d+: Type '(.*)' does not satisfy/.exec(line);
      const label = lines[Number(match?.[1]) - header - 1]?.[0];
      return match && label ? `${label}: ${match[2]}` : line;
    });
  expect(problems).toEqual([]);
});
