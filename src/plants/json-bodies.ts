import type { PlantRecord } from '../storage/types/plants.js';
import type { Page } from './page.js';
import { plantJson, type Selection } from './select.js';

/** The JSON text of GET /plants, written by hand, each plant as `select` asks (select.ts). */

/** The plants as the elements of a JSON array, without the brackets. */
function jsonElements(plants: PlantRecord[], selection: Selection): string {
  return plants.map((plant) => plantJson(plant, selection)).join(',');
}

/**
 * The JSON text of the pages the service's cache hands out again, so they are serialized once. A
 * cached page is kept under its selection (the cache's key holds it), so it has one text.
 */
const sharedPageBodies = new WeakMap<Page, string>();

export function pageBody(page: Page, selection: Selection): string {
  let body = page.shared ? sharedPageBodies.get(page) : undefined;
  if (body === undefined) {
    body = `[${jsonElements(page.plants, selection)}]`;
    if (page.shared) sharedPageBodies.set(page, body);
  }
  return body;
}

/** The whole list as one JSON array, written chunk by chunk as rows come from storage. */
export async function* jsonArray(chunks: AsyncIterable<PlantRecord[]>, selection: Selection): AsyncIterable<string> {
  let separator = '';
  yield '[';
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    yield separator + jsonElements(chunk, selection);
    separator = ',';
  }
  yield ']';
}
