import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadConfig } from '../../src/config/config.js';
import type { Env } from '../../src/config/env-settings.js';
import { type Simulator, startSimulator } from '../../src/simulator/server.js';
import { cronProblem } from '../../src/time/cron-schedule.js';
import { type CliResult, cliEnv, collectOutput } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { withStoredVisitor } from '../helpers/readme-visitor.js';

/**
 * Every command in the README is run: the CLI's by this file (literally, through sh, against a
 * test database and the simulator), the others by .ci/run or by the test named below.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
const README = read('README.md');
/**
 * The user's guide: the README and the docs it sends each task to, in reading order. Their
 * commands run in this order (the README's first: migrate, check, sync, ...).
 */
const GUIDE_FILES = [
  'README.md',
  'docs/operating.md',
  'docs/configuration.md',
  'docs/analysts.md',
  'docs/privacy.md',
  'docs/webhooks.md',
];
const GUIDE = GUIDE_FILES.map(read).join('\n');

interface Block {
  lang: string;
  body: string;
}

function codeBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1] ?? '',
    body: m[2] ?? '',
  }));
}

interface Command {
  text: string;
  /** The `export` lines of its block (their variables apply to it). */
  exports: string[];
}

/** The commands of the README's sh blocks, without comments, `a && b` split in two. */
function shellCommands(): Command[] {
  return codeBlocks(GUIDE)
    .filter((b) => b.lang === 'sh')
    .flatMap((b) => {
      const lines = b.body
        .split('\n')
        .map((line) => line.replace(/\s+#.*$/, '').trim())
        .filter((line) => line !== '' && !line.startsWith('#'))
        .flatMap((line) => line.split(/\s+&&\s+/));
      const exports = lines.filter((line) => line.startsWith('export '));
      return lines.filter((line) => !line.startsWith('export ')).map((text) => ({ text, exports }));
    });
}

/** What the crontab line and the systemd service run. */
function scheduledCommands(): Command[] {
  return codeBlocks(GUIDE)
    .filter((b) => b.lang === 'crontab' || b.lang === 'ini')
    .flatMap((b) => [...b.body.matchAll(/bin\/insights-sync\.js [^>&\n]*/g)])
    .map((m) => ({ text: `node ${m[0].trim()}`, exports: [] }));
}

/** Exported example values the tests replace: the warehouse and the service. */
const PLACEHOLDERS = ['DATABASE_URL', 'INSIGHTS_API_URL', 'INSIGHTS_API_KEY'];

/** Commands that other places run, and the text there that proves it. */
const RUN_ELSEWHERE: Record<string, { file: string; contains: string }> = {
  'npm install': { file: '.ci/run', contains: 'npm ci' },
  'npm test': { file: '.ci/run', contains: 'npm test' },
  'npm run typecheck': { file: '.ci/run', contains: 'npm run typecheck' },
  'npm run lint': { file: '.ci/run', contains: 'npm run lint' },
  'npm run demo': { file: 'test/cli/demo.test.ts', contains: "spawn('npm', ['run', 'demo']" },
  'node bin/insights-sync.js demo --keep-running': {
    file: 'test/cli/demo.test.ts',
    contains: "startCli(['demo', '--keep-running']",
  },
  // Long-running: started, used and stopped by the tests of their own.
  'node bin/insights-sync.js schedule': {
    file: 'test/reliability/lock-processes.trials.ts',
    contains: "startCli(['schedule', '--run-now']",
  },
  'node bin/insights-sync.js serve': {
    file: 'test/webhooks/serve-command.test.ts',
    contains: "startCli(['serve']",
  },
  // They write files: run with the same arguments by the report's own test, into a temporary directory.
  'node bin/insights-sync.js report --out report.html': {
    file: 'test/report/report-command.test.ts',
    contains: "runCli(['report', '--out', out], env)",
  },
  'node bin/insights-sync.js report --out march.html --source shop --from 2026-03-01 --to 2026-03-31': {
    file: 'test/report/report-command.test.ts',
    contains: "['report', '--out', out, '--source', 'shop', '--from', '2026-03-01', '--to', '2026-03-31']",
  },
  'node bin/insights-sync.js dbt-sources --out models/sources.yml': {
    file: 'test/cli/analyst-commands.test.ts',
    contains: "['dbt-sources', '--out', out]",
  },
  // From the packed tarball, installed into a temporary prefix, with the commands below.
  'npm pack': { file: 'test/reliability/package.trials.ts', contains: "['pack'" },
  'npm install -g ./insights-sync-*.tgz': {
    file: 'test/reliability/package.trials.ts',
    contains: "'install', '-g', '--prefix'",
  },
  'insights-sync demo': { file: 'test/reliability/package.trials.ts', contains: "sh('insights-sync demo'" },
  'cp .env.example .env': { file: 'test/docs/readme.test.ts', contains: "envFile('.env.example')" },
  'docker compose config --quiet': {
    file: '.ci/run',
    contains: 'docker compose --env-file .env.example config --quiet',
  },
};

/**
 * Docker is not installed where the tests run: these are checked against docker-compose.yml (the
 * service exists, the command is the CLI's), and `docker compose config` runs in .ci/run where
 * Docker is.
 */
const DOCKER_ONLY = [
  'docker compose up -d --build',
  'docker compose exec scheduler node bin/insights-sync.js status',
];

function sh(command: string, env: Record<string, string>): Promise<CliResult> {
  const child = spawn('sh', ['-c', command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  return collectOutput(child);
}

/** KEY=VALUE lines, quotes removed, as docker compose and `set -a; . ./.env` read them. */
function envFile(path: string): Env {
  const env: Env = {};
  for (const line of read(path).split('\n')) {
    const match = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match?.[1] === undefined) continue;
    env[match[1]] = (match[2] ?? '').replace(/^'(.*)'$/, '$1');
  }
  return env;
}

/** Every environment variable the configuration reads (unknown-variables.ts names others, to tell a typo from them). */
function configVariables(): string[] {
  const source = readdirSync(`${ROOT}src/config`)
    .filter((file) => file.endsWith('.ts') && file !== 'unknown-variables.ts')
    .map((file) => read(`src/config/${file}`))
    .join('\n');
  return [...new Set(source.match(/\b(?:INSIGHTS_[A-Z_]+|DATABASE_URL|LOG_LEVEL|LOG_FORMAT)\b/g))].sort();
}

/**
 * Every file an operator may copy a command line from: all of the repository but the tests, the
 * dependencies and build output (the README, docs/ with roles.sql, .env.example, the Dockerfile and
 * compose file, scripts/, and src/, where the CLI's help and its messages are written). The package
 * is private and not on the public registry: `npx insights-sync` run outside the install folder
 * (cron has no terminal to ask) would fetch and run whatever public package holds that name.
 */
const NOT_READ_BY_USERS = new Set(['.git', 'node_modules', 'dist', 'test-output', 'coverage', 'test']);
function documentedFiles(dir = ''): string[] {
  return readdirSync(`${ROOT}${dir}`, { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}${entry.name}`;
    if (NOT_READ_BY_USERS.has(path) || path === 'package-lock.json') return [];
    if (entry.isDirectory()) return documentedFiles(`${path}/`);
    return entry.isFile() ? [path] : [];
  });
}
const DOCUMENTED = documentedFiles();

describe('documented command lines', () => {
  it(`run the installed binary by its path, never through npx or npm exec (${DOCUMENTED.length} files)`, () => {
    // The files read include those beyond docs/*.md an operator copies from.
    expect(DOCUMENTED).toEqual(
      expect.arrayContaining([
        'README.md',
        '.env.example',
        'docs/roles.sql',
        'docker-compose.yml',
        'scripts/docker-initdb/10-roles.sh',
        'src/cli/main.ts',
      ]),
    );
    const found = DOCUMENTED.flatMap((file) =>
      read(file)
        .split('\n')
        .flatMap((line, i) =>
          /\bnpx\s+(?:-\S+\s+)*insights-sync\b|\bnpm\s+exec\s+(?!--no\b)(?:-\S+\s+)*insights-sync\b/.test(
            line,
          )
            ? [`${file}:${i + 1}: ${line.trim()}`]
            : [],
        ),
    );
    expect(found).toEqual([]);
  });
});

describe('the README', () => {
  let t: TestDatabase;
  let sim: Simulator;

  beforeAll(async () => {
    t = await createTestDatabase();
    const today = new Date().toISOString().slice(0, 10);
    sim = await startSimulator({ seed: 5, from: '2025-12-20', to: today, cap: 4000 });
  });
  afterAll(async () => {
    await sim.stop();
    await t.drop();
  });

  it('every insights-sync command in it runs as written, in order, against a warehouse and the service', async () => {
    const commands = [...shellCommands(), ...scheduledCommands()].filter(
      (c) => c.text.startsWith('node bin/insights-sync.js') && !(c.text in RUN_ELSEWHERE),
    );
    expect(commands.length).toBeGreaterThanOrEqual(6);
    // A test database and the simulator in place of the examples.
    const env = cliEnv({ DATABASE_URL: t.url, INSIGHTS_API_URL: sim.url, INSIGHTS_API_KEY: sim.apiKey });
    const seen = new Set<string>();
    for (const command of commands) {
      if (seen.has(command.text)) continue;
      seen.add(command.text);
      // The block's other exports run as written.
      const exports = command.exports.filter(
        (line) => !PLACEHOLDERS.includes(/^export (\w+)/.exec(line)?.[1] ?? ''),
      );
      // The sources, not the build (`node bin/insights-sync.js` runs dist/, which may be stale in a
      // checkout): the test run's transpiled CLI (test/helpers/test-cli-build.ts).
      // compiled-bin.trials.ts runs `node bin/insights-sync.js` on a fresh build, and
      // test/reliability/package.trials.ts `insights-sync demo` from the packed tarball, installed.
      // The example visitor id stands for one the warehouse holds (forget refuses an id no row holds).
      const text = await withStoredVisitor(
        command.text.replace(/^node bin\/insights-sync\.js/, `node '${inject('testCliBin')}'`),
        t.db,
      );
      const result = await sh([...exports, text].join('\n'), env);
      expect(result.code, `${command.text}\n${result.stderr}`).toBe(0);
      if (command.text.includes('--json')) expect(JSON.parse(result.stdout)).toMatchObject({ healthy: true });
    }
    const runs = await t.db.selectFrom('sync_runs').select(['trigger', 'status']).execute();
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(runs.every((r) => r.status === 'ok')).toBe(true);
  }, 120_000); // eight CLI processes, one after the other, beside other test files

  it('every other command in it is run by .ci/run or a test, or checked against docker-compose.yml', () => {
    const others = shellCommands()
      .map((c) => c.text)
      .filter((c) => !c.startsWith('node bin/insights-sync.js') || c in RUN_ELSEWHERE);
    expect(others.length).toBeGreaterThan(5);
    for (const command of others) {
      if (DOCKER_ONLY.includes(command)) continue;
      const where = RUN_ELSEWHERE[command];
      expect(where, `${command}: run it in .ci/run or a test, and list it in RUN_ELSEWHERE`).toBeDefined();
      if (where) expect(read(where.file), command).toContain(where.contains);
    }
    const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as {
      services: Record<string, { command?: string[] }>;
    };
    for (const command of DOCKER_ONLY) {
      expect(
        shellCommands().map((c) => c.text),
        'DOCKER_ONLY lists a command the README no longer has',
      ).toContain(command);
      const exec = /^docker compose exec (\S+) node bin\/insights-sync\.js (\S+)/.exec(command);
      if (exec) {
        expect(Object.keys(compose.services)).toContain(exec[1]);
        expect(read(`src/cli/${exec[2]}.ts`)).toContain(`.command('${exec[2]}')`);
      }
    }
  });

  it('its crontab line and systemd units run `sync --wait` at a valid time', () => {
    const cron =
      codeBlocks(GUIDE)
        .find((b) => b.lang === 'crontab')
        ?.body.trim() ?? '';
    const fields = cron.split(/\s+/);
    expect(cronProblem(fields.slice(0, 5).join(' '), 'UTC')).toBeUndefined();
    expect(cron).toContain('node bin/insights-sync.js sync --wait');
    expect(scheduledCommands().map((c) => c.text)).toEqual([
      'node bin/insights-sync.js sync --wait',
      'node bin/insights-sync.js sync --wait',
    ]);
    const systemd = codeBlocks(GUIDE).find((b) => b.lang === 'ini')?.body ?? '';
    expect(systemd).toContain('ExecStart=/usr/bin/node /srv/insights-sync/bin/insights-sync.js sync --wait');
    expect(systemd).toMatch(/OnCalendar=\*-\*-\* 03:00:00/);
  });

  it('its sources file examples are valid configurations', () => {
    const files = codeBlocks(GUIDE)
      .filter((b) => b.lang === 'json')
      .map((b) => b.body);
    expect(files.length).toBeGreaterThanOrEqual(2);
    const env = { INSIGHTS_CONFIG: 'sources.json', INSIGHTS_API_KEY: 'k0', SHOP_KEY: 'k1', BLOG_KEY: 'k2' };
    const names = files.map((json) => loadConfig({ env, readFile: () => json }).sources.map((s) => s.name));
    expect(names).toContainEqual(['shop', 'blog']);
  });

  it('adds a second site as it says: the source of the environment is `default`, and the example keeps it', () => {
    const single = loadConfig({
      env: { INSIGHTS_API_URL: 'https://api.example.com', INSIGHTS_API_KEY: 'k0' },
    });
    expect(single.sources.map((s) => s.name)).toEqual(['default']);
    expect(README).toMatch(/named\s+`default`/);
    const section = README.slice(README.indexOf('### Add a second site'));
    const json = codeBlocks(section).find((b) => b.lang === 'json')?.body ?? '';
    const file = loadConfig({
      env: { INSIGHTS_CONFIG: 'sources.json', INSIGHTS_API_KEY: 'k0', BLOG_KEY: 'k2' },
      readFile: () => json,
    });
    // The loaded source keeps its name, so its rows and watermarks carry on; the key is the one it had.
    expect(file.sources[0]).toMatchObject({
      name: single.sources[0]?.name,
      baseUrl: single.sources[0]?.baseUrl,
      apiKey: single.sources[0]?.apiKey,
    });
    expect(file.sources.map((s) => s.name)).toEqual(['default', 'blog']);
  });

  it('documents every setting, and .env.example lists each with its true default', () => {
    const example = envFile('.env.example');
    for (const variable of configVariables()) {
      expect(read('docs/configuration.md'), `${variable} in docs/configuration.md's table`).toMatch(
        new RegExp(`^\\|[^\\n|]*\`${variable}\`[^\\n]*\\|`, 'm'),
      );
      expect(Object.keys(example), `${variable} in .env.example`).toContain(variable);
    }
    // The example's values are the defaults (but for the placeholders of required values).
    const required = { INSIGHTS_API_URL: 'https://api.example.com', INSIGHTS_API_KEY: 'key' };
    const fromExample = loadConfig({
      env: { ...example, ...required },
      now: () => new Date('2026-06-01T00:00:00Z'),
    });
    const defaults = loadConfig({ env: required, now: () => new Date('2026-06-01T00:00:00Z') });
    expect(fromExample).toEqual(defaults);
  });

  it('docker-compose.yml runs postgres, the scheduler and the webhook receiver, each handed only the variables of .env it uses', () => {
    const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as {
      services: Record<
        string,
        {
          image?: string;
          command?: string[];
          env_file?: { path: string }[];
          stop_grace_period?: string;
          environment?: Record<string, string>;
          build?: string;
          restart?: string;
          volumes?: string[];
          depends_on?: Record<string, { condition: string }>;
        }
      >;
    };
    expect(Object.keys(compose.services).sort()).toEqual([
      'grant-serve',
      'migrate',
      'postgres',
      'scheduler',
      'webhooks',
      'worker',
    ]);
    const { migrate, scheduler, webhooks, worker } = compose.services;
    expect(worker?.command).toEqual(['worker']);
    expect(migrate?.command).toEqual(['migrate']);
    expect(scheduler?.command).toEqual(['schedule', '--run-now']);
    expect(webhooks?.command).toEqual(['serve']);
    for (const service of [migrate, scheduler, webhooks, worker]) {
      expect(service?.build).toBe('.');
      // Never the whole .env: each service is handed the variables it uses, by name.
      expect(service?.env_file).toBeUndefined();
      expect(service?.environment?.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
      // docker stop waits longer than the default grace period before SIGKILL.
      expect(Number.parseInt(service?.stop_grace_period ?? '0', 10) * 1000).toBeGreaterThan(25_000);
    }
    // Each service as the role of docs/roles.sql it needs (test/reliability/roles.test.ts).
    const user = (url: string | undefined) => /^postgres:\/\/([^:@]+)/.exec(url ?? '')?.[1];
    expect(user(migrate?.environment?.DATABASE_URL)).toBe('insights_owner');
    expect(user(scheduler?.environment?.DATABASE_URL)).toBe('insights_sync');
    expect(user(worker?.environment?.DATABASE_URL)).toBe('insights_sync');
    expect(user(webhooks?.environment?.DATABASE_URL)).toBe('insights_serve');
    const grants = compose.services['grant-serve'];
    expect(grants?.environment?.PGUSER).toBe('insights_owner');
    expect(grants?.command?.at(-1)).toBe('select insights.grant_serve()');
    expect(read('docs/roles.sql')).toContain('create function insights.grant_serve()');
    // No service but postgres itself uses the image's superuser.
    for (const [name, service] of Object.entries(compose.services)) {
      if (name === 'postgres') continue;
      const text = JSON.stringify(service);
      expect(text, name).not.toMatch(/POSTGRES_USER|POSTGRES_PASSWORD|postgres:\/\/postgres[:@]/);
      expect(service.environment?.PGUSER ?? user(service.environment?.DATABASE_URL), name).toMatch(
        /^insights_(owner|sync|serve)$/,
      );
    }
    // What each service is handed: settings of the tool only, and no secret it does not use.
    const known = new Set(configVariables());
    const secrets = (name: string) => {
      const text = JSON.stringify(compose.services[name]?.environment ?? {});
      return [...text.matchAll(/\$\{(\w*PASSWORD)|"(\w*(?:API_KEY|TOKEN|PII_KEY))"/g)].map(
        (m) => m[1] ?? m[2],
      );
    };
    for (const name of ['migrate', 'scheduler', 'worker', 'webhooks']) {
      for (const variable of Object.keys(compose.services[name]?.environment ?? {}))
        expect(known.has(variable), `${name}: ${variable} is no setting of the tool`).toBe(true);
    }
    expect(secrets('migrate')).toEqual(['INSIGHTS_OWNER_PASSWORD']);
    expect(secrets('scheduler').sort()).toEqual([
      'INSIGHTS_API_KEY',
      'INSIGHTS_PII_KEY',
      'INSIGHTS_SYNC_PASSWORD',
    ]);
    expect(secrets('worker').sort()).toEqual([
      'INSIGHTS_API_KEY',
      'INSIGHTS_PII_KEY',
      'INSIGHTS_SYNC_PASSWORD',
    ]);
    // The internet-facing receiver: its database URL, its token, the pii key; nothing else secret.
    expect(secrets('webhooks').sort()).toEqual([
      'INSIGHTS_PII_KEY',
      'INSIGHTS_SERVE_PASSWORD',
      'INSIGHTS_WEBHOOK_TOKEN',
    ]);
    for (const variable of [
      'INSIGHTS_WEBHOOK_TOKEN',
      'INSIGHTS_PII',
      'INSIGHTS_PII_KEY',
      'INSIGHTS_SOURCE_NAME',
    ])
      expect(webhooks?.environment, variable).toHaveProperty(variable);
    for (const variable of ['INSIGHTS_API_URL', 'INSIGHTS_API_KEY', 'INSIGHTS_SCHEDULE'])
      expect(scheduler?.environment, variable).toHaveProperty(variable);
    // migrate, then the receiver's grants, run once and in order before the services that need them.
    expect(migrate?.restart).toBe('no');
    expect(grants?.restart).toBe('no');
    expect(migrate?.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(grants?.depends_on?.migrate?.condition).toBe('service_completed_successfully');
    expect(scheduler?.depends_on?.migrate?.condition).toBe('service_completed_successfully');
    expect(webhooks?.depends_on?.migrate?.condition).toBe('service_completed_successfully');
    expect(webhooks?.depends_on?.['grant-serve']?.condition).toBe('service_completed_successfully');
    // The init script and the file it runs are mounted where the image and the script look.
    const volumes = compose.services.postgres?.volumes ?? [];
    expect(volumes).toContain('./scripts/docker-initdb:/docker-entrypoint-initdb.d:ro');
    const rolesMount = volumes.find((v) => v.startsWith('./docs/roles.sql:'));
    const initScript = read('scripts/docker-initdb/10-roles.sh');
    expect(initScript).toContain(`\${ROLES_SQL:-${rolesMount?.split(':')[1]}}`);
    for (const variable of ['INSIGHTS_OWNER_PASSWORD', 'INSIGHTS_SYNC_PASSWORD', 'INSIGHTS_SERVE_PASSWORD']) {
      expect(compose.services.postgres?.environment?.[variable], variable).toContain(`\${${variable}:?`);
      expect(initScript).toContain(variable);
    }
    // The application image does not need the init script (the build stage copies the bundler only).
    expect(read('Dockerfile')).not.toMatch(/COPY.*scripts\/docker-initdb|COPY scripts /);
    // Every ${VAR} compose reads is documented in .env.example.
    const used = [...read('docker-compose.yml').matchAll(/\$\{([A-Z_]+)/g)].map((m) => m[1]);
    const example = Object.keys(envFile('.env.example'));
    for (const variable of used) expect(example, `${variable} in .env.example`).toContain(variable);
    expect(read('Dockerfile')).toMatch(/ENTRYPOINT \["node", "bin\/insights-sync\.js"\]/);
  });
});
