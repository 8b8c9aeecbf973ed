import type { ApiClient } from '../api/api-client.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { newDayFetch, planDay, planRunProof } from './day-plan.js';
import type { Answer, FetchedDay, LimitPolicy, Plan, ResourceKnowledge } from './plan-steps.js';
import { canaryDay } from './reading-session.js';

// The day's vocabulary lives with the plan's; importers of fetchDay find it here too.
export type { FetchedDay, LimitPolicy, ResourceKnowledge } from './plan-steps.js';

/**
 * Fetches one UTC day of a windowed resource: sends the requests the day's plan (day-plan.ts)
 * decides on and feeds their answers back, until the plan settles the day.
 */
export function fetchDay(
  client: ApiClient,
  resource: WindowedResource,
  day: DayString,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  /** The day is not over (today): its answer settles nothing (day-plan.ts, underProof). */
  open = false,
  /** An earlier run settled the day empty: the widest request is asked first (day-plan.ts, emptyFirst). */
  emptyBefore = false,
  /** Items earlier runs stored of the day: the first limit's hint (limit-steps.ts, hintedStartLimit). */
  itemsBefore = 0,
): Promise<FetchedDay> {
  return drive(
    client,
    resource,
    day,
    planDay(newDayFetch(resource, day, policy, knowledge, open, emptyBefore, itemsBefore)),
  );
}

/**
 * The run's last proof of a resource's reading, once its windows are read (day-plan.ts,
 * planRunProof): the days it reopens, which the run reads again.
 */
export function proveRun(
  client: ApiClient,
  resource: WindowedResource,
  policy: LimitPolicy,
  knowledge: ResourceKnowledge,
  today: DayString,
): Promise<DayString[]> {
  const canary = (knowledge.session && canaryDay(knowledge.session)) ?? ('' as DayString);
  return drive(client, resource, canary, planRunProof(resource, policy, knowledge, today));
}

/** Sends the requests a plan yields and feeds their answers back, until it finishes. */
async function drive<T>(
  client: ApiClient,
  resource: WindowedResource,
  day: DayString,
  plan: Plan<T>,
): Promise<T> {
  let step = plan.next();
  while (!step.done) {
    const wanted = step.value;
    let answer: Answer;
    if (wanted.kind === 'wait') {
      await wanted.until;
      answer = { kind: 'waited' };
    } else if (wanted.kind === 'all') {
      // Every part ends before the plan goes on, a failed one's error with it: none asks after.
      const parts = await Promise.allSettled(wanted.plans.map((part) => drive(client, resource, day, part)));
      const failed = parts.find((part) => part.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      answer = { kind: 'waited' };
    } else {
      try {
        answer = {
          kind: 'items',
          items: await client.window(
            resource,
            { ...wanted.range, limit: wanted.limit },
            { day: wanted.day ?? day },
          ),
        };
      } catch (error) {
        answer = { kind: 'failed', error };
      }
    }
    step = plan.next(answer);
  }
  return step.value;
}
