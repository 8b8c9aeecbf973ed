import type { WindowedResource } from '../schemas/resources.js';
import { type OddChoice, oddChoice, withOddValue } from './odd-values.js';
import { hashSeed, unitHash } from './random.js';

/**
 * How items are dressed on the way out: extra fields the spec does not name, a share of
 * malformed items, a share of odd values and malformed test variants. All are decided per item
 * from the seed and its key, so truth() and the HTTP responses agree on every item.
 */
export interface ItemView {
  extraFields: boolean;
  /** Share (0..1) of windowed items served broken. */
  malformedRate: number;
  /** Share (0..1) of windowed items and heatmaps served with one odd, type-valid value. */
  oddValueRate: number;
  /** The first numbered variant of each test's detail is served broken. */
  malformedVariants: boolean;
}

export const DEFAULT_VIEW: ItemView = {
  extraFields: false,
  malformedRate: 0,
  oddValueRate: 0,
  malformedVariants: false,
};

/** Fields a newer service version might add; a client must keep them verbatim in its raw copy. */
const EXTRA_FIELDS = {
  x_extra: { origin: 'simulator', note: 'a field the spec does not describe' },
  x_score: 0.5,
} as const;

export function withExtras<T extends object>(item: T, view: ItemView): T {
  return view.extraFields ? { ...item, ...EXTRA_FIELDS } : item;
}

type Item = Record<string, unknown>;

/** The natural key of an item (spec: feedback and survey answers are keyed by a pair). */
export function itemKey(resource: WindowedResource, item: Item): string {
  if (resource === 'feedback') return `${item.id}:${item.feedback_id}`;
  if (resource === 'survey') return `${item.id}:${item.question_id}`;
  return String(item.id);
}

function isMalformed(seed: number, resource: WindowedResource, item: Item, rate: number): boolean {
  return rate > 0 && unitHash(seed, 'malformed', resource, itemKey(resource, item)) < rate;
}

// Each defect is a wrong type or a missing required field: exactly what schema validation must catch.
const DEFECTS: Record<WindowedResource, Array<(item: Item) => void>> = {
  feedback: [
    (item) => {
      item.rating = String(item.rating);
    },
    (item) => {
      delete item.dt;
    },
    (item) => {
      item.id = String(item.id);
    },
    (item) => {
      item.visitor = null;
    },
  ],
  survey: [
    (item) => {
      item.question_id = String(item.question_id);
    },
    (item) => {
      delete item.comment;
    },
    (item) => {
      item.dt = Date.parse(String(item.dt));
    },
    (item) => {
      delete item.visitor;
    },
  ],
  recordings: [
    (item) => {
      item.duration = String(item.duration);
    },
    (item) => {
      delete item.id;
    },
    (item) => {
      item.dt = Date.parse(String(item.dt));
    },
    (item) => {
      delete item.video_link;
    },
  ],
};

/** A broken copy of the item; which defect it gets is fixed by the seed and the item's key. */
function malform(seed: number, resource: WindowedResource, item: Item): Item {
  const defects = DEFECTS[resource];
  const defect = defects[hashSeed(seed, 'defect', resource, itemKey(resource, item)) % defects.length];
  const copy = { ...item };
  defect?.(copy);
  return copy;
}

export interface PresentedItem {
  item: Item;
  malformed: boolean;
  /** The odd value it carries; never on a malformed item, so odd items are all valid. */
  odd: OddChoice | null;
}

/**
 * The item as served: with extra fields if enabled, broken if it falls in the malformed share,
 * else carrying an odd value if it falls in that share.
 */
export function presentWindowed(
  seed: number,
  resource: WindowedResource,
  item: Item,
  view: ItemView,
): PresentedItem {
  const dressed = withExtras(item, view);
  if (isMalformed(seed, resource, item, view.malformedRate)) {
    return { item: malform(seed, resource, dressed), malformed: true, odd: null };
  }
  const odd = oddChoice(seed, resource, itemKey(resource, item), view.oddValueRate);
  return { item: odd ? withOddValue(dressed, odd) : dressed, malformed: false, odd };
}

/** A heatmap as served: extra fields, and maybe an odd heatmap_limit. */
export function presentHeatmap<T extends { id: string }>(
  seed: number,
  heatmap: T,
  view: ItemView,
): { item: T; odd: OddChoice | null } {
  const dressed = withExtras(heatmap, view);
  const odd = oddChoice(seed, 'heatmaps', heatmap.id, view.oddValueRate);
  return { item: odd ? withOddValue(dressed, odd) : dressed, odd };
}
