/**
 * The database answered that it cannot do the work, whatever the statement: SQLSTATE class 53
 * (insufficient resources: a full disk, memory, connections, a configured limit) or 54 (program
 * limit exceeded: a statement beyond what PostgreSQL allows). Neither is the command's data nor a
 * bug of the caller's input; both are said in one line with what to do, and end the command with
 * the database's exit code (5). Pure: tested without a database.
 */
export interface ResourceShortage {
  /** The SQLSTATE, e.g. `53100`. */
  sqlState: string;
  /** PostgreSQL's condition name in words, e.g. `disk full`. */
  condition: string;
  /** The server's own message (names a file or a limit, never a value of ours). */
  detail: string;
  /** What the operator can do. */
  next: string;
}

const SHORTAGE_CLASS = /^5[34][0-9A-Z]{3}$/;

const PROGRAM_LIMIT =
  'a statement went beyond a fixed limit of PostgreSQL: report it to the insights-sync maintainers with this line';

/** Every condition of classes 53 and 54 PostgreSQL defines (Appendix A), with its next step. */
const CONDITIONS: ReadonlyMap<string, { condition: string; next: string }> = new Map([
  [
    '53000',
    { condition: 'insufficient resources', next: "see the database server's log for which resource ran out" },
  ],
  [
    '53100',
    {
      condition: 'disk full',
      next: "free space on the database server's disk (its data directory, WAL or tablespace), then rerun",
    },
  ],
  [
    '53200',
    {
      condition: 'out of memory',
      next: 'the database server ran out of memory: lower INSIGHTS_CONCURRENCY, or give the server more memory',
    },
  ],
  [
    '53300',
    {
      condition: 'too many connections',
      next: "lower INSIGHTS_CONCURRENCY (or the other commands' connections), or raise the server's max_connections",
    },
  ],
  [
    '53400',
    {
      condition: 'configuration limit exceeded',
      next: "a limit of the server's configuration was reached (its log names it, e.g. max_locks_per_transaction): raise it",
    },
  ],
  ['54000', { condition: 'program limit exceeded', next: PROGRAM_LIMIT }],
  ['54001', { condition: 'statement too complex', next: PROGRAM_LIMIT }],
  ['54011', { condition: 'too many columns', next: PROGRAM_LIMIT }],
  ['54023', { condition: 'too many arguments', next: PROGRAM_LIMIT }],
]);

/** The shortage `error` (or an error it was caused by) reports; undefined for any other error. */
export function resourceShortage(error: unknown): ResourceShortage | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Object && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && SHORTAGE_CLASS.test(code)) {
      const known = CONDITIONS.get(code) ?? CONDITIONS.get(`${code.slice(0, 2)}000`);
      const message = (e as { message?: unknown }).message;
      return {
        sqlState: code,
        condition: known?.condition ?? 'insufficient resources',
        detail: typeof message === 'string' ? message : '',
        next: known?.next ?? PROGRAM_LIMIT,
      };
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `disk full (SQLSTATE 53100: could not extend file ...)`: what a run's log and error record. */
export function describeShortage(shortage: ResourceShortage): string {
  return `${shortage.condition} (SQLSTATE ${shortage.sqlState}${shortage.detail === '' ? '' : `: ${shortage.detail}`})`;
}

/**
 * The database's refusal raised again where the run stops on it: carries the SQLSTATE (`code`)
 * and the server's message as pg's error does, so resourceShortage() and the CLI read it alike.
 */
export class ResourceShortageError extends Error {
  readonly code: string;

  constructor(shortage: ResourceShortage) {
    super(shortage.detail);
    this.name = 'ResourceShortageError';
    this.code = shortage.sqlState;
  }
}
