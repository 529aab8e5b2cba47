/** What a listing of one account's plants asks storage for: filters, order, and where to go on from. */

/**
 * Each order of a listing, once: `id`, `-id` by id; `name`, `-name` by the name's code points, ties
 * by id (the exact reverse for `-name`). Both engines' ORDER BY and "after this position" clauses
 * follow from it, and so does what a cursor keeps of a position (the name only for the name orders).
 */
export const ORDERS = {
  id: { byName: false, descending: false },
  '-id': { byName: false, descending: true },
  name: { byName: true, descending: false },
  '-name': { byName: true, descending: true },
} as const satisfies Record<string, { byName: boolean; descending: boolean }>;

export type PlantOrder = keyof typeof ORDERS;

export const PLANT_ORDERS = Object.keys(ORDERS) as PlantOrder[];

/**
 * Every filter of a listing, once: its value's type, and its canonical form (two values that select
 * the same plants have the same form). `PlantFilter` is derived from this table, and so are the
 * cursor's digest and the page cache's key (`canonicalFilter`) and each engine's choice of plan
 * (`onlyFilter`); what cannot be derived (the query parameter, the SQL) is a table keyed by
 * `keyof PlantFilter` in its place (plants/list-query.ts, each engine's plant-listing.ts), so a
 * filter added here and forgotten there does not compile. Adding a filter: docs/fields-and-filters.md.
 */
const FILTERS = {
  /** Only plants whose tag equals one of these exactly. A set: the same tags in another order are the same filter. */
  tags: (tags: string[]) => [...new Set(tags)].sort(),
  /** Only plants whose case-folded name contains this text, case-folded (storage folds it). */
  text: (text: string) => text,
};

/** Each filter: absent or null, any plant. */
export type PlantFilter = { [K in keyof typeof FILTERS]?: Parameters<(typeof FILTERS)[K]>[0] | null };

export type PlantFilterKey = keyof PlantFilter;

export const PLANT_FILTER_KEYS = Object.keys(FILTERS) as PlantFilterKey[];

/** The filters in one fixed order, each in its canonical form (null when absent): equal for equal filters. */
export function canonicalFilter(filter: PlantFilter): unknown[] {
  return PLANT_FILTER_KEYS.map((key) => {
    const value = filter[key];
    return value === undefined || value === null ? null : (FILTERS[key] as (value: unknown) => unknown)(value);
  });
}

/** Whether `key` is the one filter set: a plan made for that filter alone (a fast path) may answer. */
export function onlyFilter(filter: PlantFilter, key: PlantFilterKey): boolean {
  return PLANT_FILTER_KEYS.every((other) => (filter[other] ?? null) === null || other === key) && isSet(filter, key);
}

export function isSet<K extends PlantFilterKey>(
  filter: PlantFilter,
  key: K,
): filter is PlantFilter & { [P in K]: NonNullable<PlantFilter[K]> } {
  return (filter[key] ?? null) !== null;
}

/** The last plant of the previous page, in the listing's order: the listing goes on after it. */
export interface PlantPosition {
  id: bigint;
  /** Used by the name orders only. */
  name: string;
}

export interface PlantListing {
  filter: PlantFilter;
  order: PlantOrder;
  after: PlantPosition | null;
}

/** Shorter search texts are tested on every candidate row: a trigram index cannot answer them. */
export const TRIGRAM_MIN_LENGTH = 3;

/** Characters (code points) of a search text. */
export function characterCount(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
