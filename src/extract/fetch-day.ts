import type { ApiClient } from '../api/api-client.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { newDayFetch, planDay } from './day-plan.js';
import type { Answer } from './plan-steps.js';
import type { ServerReading } from './server-reading.js';

export interface LimitPolicy {
  /** First `limit` sent for a day. */
  limit: number;
  /** Largest `limit` a saturated day is asked again with. */
  maxLimit: number;
}

/**
 * What a run knows about one source and resource: the reading (shared by its windows, so what
 * one window learns serves the others), and the run's own memory of what it tried.
 */
export interface ResourceKnowledge {
  reading: ServerReading;
  /** Largest limit the server answered without a 400 since it refused one. */
  limitAccepted?: number;
  /** A refused limit is tried once more per run, so a raised maximum is noticed. */
  refusedRetried?: boolean;
  /** Requests spent this run proving the server's day (bounded: see MAX_PROOFS). */
  proofs?: number;
  /** Responses received this run: a reading nothing answered to has nothing new to store. */
  responses?: number;
  /** Whether this run has checked that the stored reading still holds (see staleReading). */
  staleChecked?: boolean;
  /** That check while a window of the run makes it: the run's other windows wait for its verdict. */
  staleChecking?: Promise<void>;
  /** How often this run found the stored reading stale and learned it again from nothing. */
  relearned?: number;
}

export interface FetchedDay {
  /**
   * Items whose dt is on the day, and items without a readable dt (validation quarantines them),
   * once each however many responses held them.
   */
  onDay: unknown[];
  /** Items of other days the responses held: every returned item is stored, whatever was asked. */
  otherDays: unknown[];
  /** The limit of the last request. */
  requestedLimit: number;
  /** Most items one response for this day returned. */
  servedCount: number;
  /** Some of the day's items may be missing: a response for it stayed at the server's cap or our ceiling. */
  truncated: boolean;
  requests: number;
}

/**
 * Fetches one UTC day of a windowed resource: sends the requests the day's plan (day-plan.ts)
 * decides on and feeds their answers back, until the plan settles the day.
 */
export async function fetchDay(
  client: ApiClient,
  resource: WindowedResource,
  day: DayString,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
): Promise<FetchedDay> {
  const plan = planDay(newDayFetch(resource, day, policy, knowledge));
  let step = plan.next();
  while (!step.done) {
    const wanted = step.value;
    let answer: Answer;
    if (wanted.kind === 'wait') {
      await wanted.until;
      answer = { kind: 'waited' };
    } else {
      try {
        answer = {
          kind: 'items',
          items: await client.window(resource, { ...wanted.range, limit: wanted.limit }, { day }),
        };
      } catch (error) {
        answer = { kind: 'failed', error };
      }
    }
    step = plan.next(answer);
  }
  return step.value;
}
