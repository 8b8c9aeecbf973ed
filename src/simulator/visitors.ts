import type { Visitor } from '../schemas/visitor.js';
import { DAY_MS, dayStartMs, isoAt } from '../time/days.js';
import { createRandom, hashSeed, hexHash } from './random.js';
import { AGENTS, COMPANIES, FIRST_NAMES, LAST_NAMES, PAGES, REFERRERS, SITE } from './vocabulary.js';

/**
 * Big enough that visitors look varied, small enough that most of them give feedback and answer
 * surveys several times: the warehouse must then see the very same visitor object each time.
 */
const VISITOR_POOL_SIZE = 400;

/** The visitors of a dataset; visitor `i` depends only on (seed, i, first day of the range). */
export function createVisitorPool(seed: number, from: string, size = VISITOR_POOL_SIZE): readonly Visitor[] {
  const pool: Visitor[] = [];
  for (let i = 0; i < size; i++) pool.push(createVisitor(seed, from, i));
  return pool;
}

function createVisitor(seed: number, from: string, index: number): Visitor {
  const rng = createRandom(hashSeed(seed, 'visitor', index));
  const first = rng.pick(FIRST_NAMES);
  const last = rng.pick(LAST_NAMES);
  const agent = rng.pick(AGENTS);
  // Visitors existed before the first day with data, up to a year earlier.
  const createdMs = dayStartMs(from) - rng.int(1, 365) * DAY_MS + rng.int(0, DAY_MS - 1);
  return {
    id: `v${String(index + 1).padStart(4, '0')}-${hexHash(seed, 'visitor-id', index).slice(0, 6)}`,
    name: `${first} ${last}`,
    // The spec allows an empty company and an empty ref_page; about a third of visitors have them.
    company: rng.chance(0.35) ? '' : rng.pick(COMPANIES),
    email: `${first}.${last}.${index + 1}@mail.example`.toLowerCase(),
    ip: `203.0.${rng.int(0, 255)}.${rng.int(1, 254)}`,
    user_agent: agent.userAgent,
    landing_page: `${SITE}${rng.pick(PAGES)}`,
    ref_page: rng.chance(0.3) ? '' : rng.pick(REFERRERS),
    created_at: isoAt(createdMs),
    device: agent.device,
    browser: agent.browser,
    os: agent.os,
  };
}
