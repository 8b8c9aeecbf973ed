/**
 * How an instant (an ISO string in UTC, as PostgreSQL's timestamptz reaches JavaScript) reads on a
 * screen whose column or label already says UTC: the date and the time of day, without the `T`,
 * the milliseconds or the `Z`.
 */
export function utcSeconds(iso: string): string {
  return iso.slice(0, 19).replace('T', ' ');
}

/** As utcSeconds, to the minute: enough for when a report was made. */
export function utcMinutes(iso: string): string {
  return iso.slice(0, 16).replace('T', ' ');
}
