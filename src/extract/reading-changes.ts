import { HOUR_MS } from '../time/days.js';
import { endInclusive, type ServerReading, serverDay, startInclusive } from './server-reading.js';

/**
 * What changed between the reading stored before and the one a run stores now, field by field,
 * each with what the server answered that proved it. A change is a proved value the server no
 * longer plays, never a value learned: evidence only narrows the bounds and the server day
 * (an unproved bound is taken as exclusive, so a quiet day can make a stable server look late
 * until an item near midnight comes), and they change only when the run's check found the stored
 * reading stale and learned it again. A field learned for the first time is no change either,
 * nor a cap or a refused limit a run did not meet again (both are learned again each run).
 */
export type ReadingField =
  | 'startdate'
  | 'enddate'
  | 'server_day'
  | 'order'
  | 'cap'
  | 'limit_refused'
  | 'instants';

export interface ReadingChange {
  field: ReadingField;
  from: string;
  to: string;
  /** What the server answered that proved it, in a few words. */
  evidence: string;
}

/** What a probe at an instant answered, per verdict (src/extract/time-slices.ts). */
const INSTANTS_EVIDENCE: Record<NonNullable<ServerReading['instants']>, string> = {
  honoured: 'a request bounded by instants held only the items between them',
  ignored: 'a request bounded by instants held items outside them',
  refused: 'a request bounded by instants was answered 400',
};

/** "+1 h", "-4.5 h", "+24 h": how far past an asked midnight answers reached. */
function hours(ms: number | null): string {
  if (ms === null) return 'nothing yet';
  const h = Math.round((ms / HOUR_MS) * 100) / 100;
  return `${h >= 0 ? '+' : ''}${h === 0 ? 0 : h} h`;
}

function bound(inclusive: boolean): string {
  return inclusive ? 'inclusive' : 'exclusive';
}

function count(n: number | null): string {
  return n === null ? 'none' : String(n);
}

/**
 * The changes from `before` (as stored) to `after` (as it is stored now: a run that saw no items
 * keeps the stored cap and largest response). `relearned`: the run found the stored reading
 * stale (a wider request held items the narrow one lacked) and learned it again from nothing.
 */
export function readingChanges(
  before: ServerReading,
  after: ServerReading,
  relearned: boolean,
): ReadingChange[] {
  const reach = `answers reach from startdate ${hours(after.headMs)} to enddate ${hours(after.tailMs)}`;
  const bounds = `a wider request held items the stored reading's request lacked; ${reach}`;
  const changes: ReadingChange[] = [];
  const add = (field: ReadingField, from: string, to: string, evidence: string) => {
    if (from !== to) changes.push({ field, from, to, evidence });
  };
  if (relearned && before.headMs !== null)
    add('startdate', bound(startInclusive(before)), bound(startInclusive(after)), bounds);
  if (relearned && before.tailMs !== null)
    add('enddate', bound(endInclusive(before)), bound(endInclusive(after)), bounds);
  if (relearned && serverDay(before) !== 'unknown')
    add('server_day', serverDay(before), serverDay(after), bounds);
  // A re-learned reading without an order yet has not proved another one.
  if (before.order !== null && after.order !== null)
    add(
      'order',
      before.order,
      after.order,
      after.order === 'unordered'
        ? 'responses listed their items in both orders'
        : `a response listed its items ${after.order.replace('-', ' ')}`,
    );
  const cap = capChange(before, after);
  if (cap !== undefined) add('cap', count(before.cap), count(after.cap), cap);
  const limit = limitChange(before, after);
  if (limit !== undefined) add('limit_refused', count(before.limitRefused), count(after.limitRefused), limit);
  // Asked again only when a day fills the cap: a verdict is a probe's answer, never a default.
  if (before.instants !== null && after.instants !== null)
    add('instants', before.instants, after.instants, INSTANTS_EVIDENCE[after.instants]);
  return changes;
}

/** The evidence of a changed cap, or undefined when nothing proves one. */
function capChange(before: ServerReading, after: ServerReading): string | undefined {
  if (before.cap !== null && after.cap !== null && before.cap !== after.cap)
    return `a wider request came back with ${after.cap} items, no more`;
  // Raised: a response held more than the stored cap.
  if (before.cap !== null && after.cap === null && after.largestResponse > before.cap)
    return `a response held ${after.largestResponse} items, more than the cap of ${before.cap}`;
  // Lowered from none: earlier answers held more than the cap proved now.
  if (before.cap === null && after.cap !== null && before.largestResponse > after.cap)
    return `a wider request came back with ${after.cap} items, no more, where a response held ${before.largestResponse} before`;
  return undefined;
}

/**
 * The evidence of a changed maximum limit, or undefined when nothing proves one. The smallest
 * refused limit narrows on its own as a run steps its limits (a stable maximum of 600 is refused
 * at 1000, then at 999): a smaller refusal is a change only where a response at least that large
 * came before (a response holds at most its limit, so such a limit was answered then).
 */
function limitChange(before: ServerReading, after: ServerReading): string | undefined {
  const { limitRefused: was } = before;
  const { limitRefused: now } = after;
  if (now === was) return undefined;
  if (now === null) return `a request with limit ${was} or more was answered`;
  // A refusal above the stored one: the stored was cleared by a limit at least as large answered.
  if ((was !== null && now > was) || before.largestResponse >= now) return `limit ${now} answered HTTP 400`;
  return undefined;
}
