import os from 'node:os';
import { withClient } from '../scripts/dev-database/admin.js';
import type { BenchServer } from './database.js';

/** What the figures were measured on: they mean little without it. */
export interface Machine {
  cores: number;
  cpu: string;
  memoryGb: number;
  node: string;
  postgres: string;
  /** The settings that decide commit and load speed. */
  postgresSettings: string;
  /** How the database was found: TEST_DATABASE_URL, a container, an embedded server. */
  databaseKind: string;
}

export async function describeMachine(server: BenchServer): Promise<Machine> {
  const settings = await withClient(server.adminUrl, async (client) => {
    const { rows } = await client.query<{ name: string; setting: string; unit: string | null }>(
      `select name, setting, unit from pg_settings
       where name in ('synchronous_commit', 'fsync', 'shared_buffers', 'max_wal_size', 'wal_compression')
       order by name`,
    );
    return rows
      .map((r) => `${r.name}=${r.setting}${r.unit && r.unit !== '' ? ` (${r.unit})` : ''}`)
      .join(', ');
  });
  return {
    cores: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGb: os.totalmem() / 1024 ** 3,
    node: process.version,
    postgres: server.version,
    postgresSettings: settings,
    databaseKind: server.kind === 'given' ? 'given by the caller' : server.kind,
  };
}

/** The 1-minute load average: other work on a shared machine shows here. */
export function loadAverage(): number {
  return os.loadavg()[0] ?? Number.NaN;
}
