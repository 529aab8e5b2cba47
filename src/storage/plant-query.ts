/** What a listing of one account's plants asks storage for: filters, order, and where to go on from. */

/** `id`, `-id`: by id; `name`, `-name`: by the name's code points, ties by id (the reverse for `-name`). */
export type PlantOrder = 'id' | '-id' | 'name' | '-name';

export const PLANT_ORDERS: readonly PlantOrder[] = ['id', '-id', 'name', '-name'];

export interface PlantFilter {
  /** Only plants whose tag equals one of these exactly; null: any plant. */
  tags: string[] | null;
  /** Only plants whose case-folded name contains this text, case-folded (storage folds it); null: any plant. */
  text: string | null;
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
