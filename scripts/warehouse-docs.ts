/**
 * npm run docs:warehouse: regenerates the generated parts of docs/warehouse.md (the data
 * dictionary and the Mermaid ER diagram) and docs/warehouse-er.svg from a freshly migrated
 * database, so the document says what the migrations create. test/analyst/dictionary.test.ts
 * fails when the committed document differs from what this would write.
 *
 * The database server: TEST_DATABASE_URL, else Docker, else an embedded PostgreSQL (as the tests).
 * The drawing needs a Chromium (scripts/chromium.ts says where it looks).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { bookkeepingSchema } from '../src/db/bookkeeping.js';
import { introspect } from '../src/db/catalog.js';
import { createDb, createPool } from '../src/db/connection.js';
import { migrateToLatest } from '../src/db/migrator.js';
import { createDatabase, databaseUrl, dropDatabase, withClient } from './dev-database/admin.js';
import { startDatabaseServer } from './dev-database/server.js';
import { DIAGRAM_FILE, renderDocument, renderMermaid } from './warehouse-docs/render.js';
import { renderMermaidSvg } from './warehouse-docs/render-diagram.js';

const root = path.resolve(import.meta.dirname, '..');
const DOC = path.join(root, 'docs', 'warehouse.md');
const SCHEMA = 'insights';

const server = await startDatabaseServer();
const name = `insights_docs_${process.pid}`;
try {
  await withClient(server.adminUrl, (admin) => createDatabase(admin, name));
  const pool = createPool({ url: databaseUrl(server.adminUrl, name), schema: SCHEMA, max: 1 });
  const db = createDb(pool);
  try {
    const outcome = await migrateToLatest(db, SCHEMA);
    if (outcome.error !== undefined) throw new Error('migrating failed', { cause: outcome.error });
    const schema = await introspect(pool, [SCHEMA, bookkeepingSchema(SCHEMA)]);
    const before = await fs.readFile(DOC, 'utf8');
    const after = renderDocument(before, schema);
    await fs.writeFile(DOC, after);
    process.stdout.write(`${before === after ? 'unchanged' : 'updated'} ${path.relative(root, DOC)}\n`);
    const svg = await renderMermaidSvg(renderMermaid(schema));
    await fs.writeFile(path.join(root, 'docs', DIAGRAM_FILE), svg);
    process.stdout.write(`drew docs/${DIAGRAM_FILE}\n`);
  } finally {
    await db.destroy();
  }
} finally {
  await withClient(server.adminUrl, (admin) => dropDatabase(admin, name)).catch(() => {});
  await server.stop();
}
