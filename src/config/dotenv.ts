import { existsSync, readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { CliError } from '../errors.js';

/** `KEY=value`, optionally after `export `, as docker compose and Node read them. */
const ASSIGNMENT = /^\s*(?:export\s+)?[A-Za-z_][A-Za-z0-9_.-]*\s*=(.*)$/;

/**
 * Reads `.env` of the working directory into process.env, if there is one: what a cron job or a
 * systemd unit started elsewhere would otherwise miss. Variables already set win over the file
 * (Node's process.loadEnvFile keeps them). Node skips a line it cannot read without a word, so
 * the file is checked first: a malformed line ends the command (exit 2) naming the line, never
 * its content, which may hold a secret.
 *
 * Returns a warning for the caller to log once it has a logger when the file is open to users
 * other than its owner (see looseModeWarning); undefined otherwise.
 */
export function loadDotEnv(path = '.env'): string | undefined {
  const file = resolve(path);
  if (!existsSync(file)) return undefined;
  const problem = malformedLine(readFileSync(file, 'utf8'));
  if (problem !== undefined)
    throw new CliError(
      `${path} line ${problem}: expected KEY=value, a # comment or an empty line (the line is not shown: it may hold a secret)`,
    );
  process.loadEnvFile(file);
  return looseModeWarning(file, statSync(file).mode);
}

/**
 * .env holds the database passwords, the API key and the PII key: any permission for its group or
 * others (mode & 077) gets a warning, the rule libpq applies to ~/.pgpass and ssh to a private
 * key. Group access too: the group of a file made with the usual umask 022 is often a wide one
 * (users, staff). A warning, not a refusal: the command still runs, as before. Windows has no
 * such mode bits.
 */
export function looseModeWarning(
  file: string,
  mode: number,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (platform === 'win32' || (mode & 0o077) === 0) return undefined;
  const octal = (mode & 0o777).toString(8).padStart(4, '0');
  return `${file} is open to users other than its owner (mode ${octal}) and holds passwords and keys: run chmod 600 ${file}`;
}

/** The 1-based number of the first line that is not KEY=value, a comment or blank; else undefined. */
function malformedLine(text: string): number | undefined {
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    const match = ASSIGNMENT.exec(line);
    if (match === null) return i + 1;
    // A quoted value may span lines: skip to the line that closes it.
    const value = (match[1] ?? '').trim();
    const quote = value[0];
    if (quote !== '"' && quote !== "'" && quote !== '`') continue;
    if (value.length > 1 && value.slice(1).includes(quote)) continue;
    const start = i;
    do i++;
    while (i < lines.length && !(lines[i] ?? '').includes(quote));
    if (i >= lines.length) return start + 1;
  }
  return undefined;
}
