import type { ApiClient } from '../api/api-client.js';
import type { WindowedResource } from '../schemas/resources.js';
import type { DayString } from '../time/days.js';
import { newDayFetch, planDay } from './day-plan.js';
import type { Answer, FetchedDay, LimitPolicy, ResourceKnowledge } from './plan-steps.js';

// The day's vocabulary lives with the plan's; importers of fetchDay find it here too.
export type { FetchedDay, LimitPolicy, ResourceKnowledge } from './plan-steps.js';

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
