/**
 * Who holds the run lock, and how output names them: no database driver here, so `status --help`
 * and the other cheap paths of the CLI can name a holder without loading pg.
 */

export interface LockHolder {
  /** pid and host of the insights-sync process, from its connection's application_name. */
  pid: number | null;
  host: string | null;
  /**
   * The holder's database user, as PostgreSQL knows it (not chosen by the client): only roles
   * that may take the lock appear here (the sync role, the owner, a superuser), or autovacuum (null).
   */
  user: string | null;
  /** The holder's PostgreSQL backend, when its process is not an insights-sync one we can name. */
  backendPid: number;
  since: Date | null;
}

export function describeHolder(schema: string, holder: LockHolder | undefined): string {
  const who = holder === undefined ? '' : ` (${describeHolderOnly(holder)})`;
  return `another insights-sync run holds the lock on schema ${schema}${who}`;
}

/** "pid P on host H, database user U, since T": the holder as the busy message and `status` show it. */
export function describeHolderOnly(holder: LockHolder): string {
  const process =
    holder.pid !== null
      ? `pid ${holder.pid} on host ${holder.host ?? '?'}`
      : `PostgreSQL backend ${holder.backendPid}`;
  return `${process}${user(holder)}${since(holder)}`;
}

function user(holder: LockHolder): string {
  return holder.user === null ? '' : `, database user ${holder.user}`;
}

function since(holder: LockHolder): string {
  return holder.since === null ? '' : `, since ${holder.since.toISOString()}`;
}
