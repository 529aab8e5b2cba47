import { serializePlant } from '../plant-fields.js';
import type { Plant } from '../schemas.js';
import type { Page } from './page.js';

/** The JSON text of GET /plants, written by hand around the serializer compiled from the Plant schema (plant-fields.ts). */

/** The plants as the elements of a JSON array, without the brackets. */
function jsonElements(plants: Plant[]): string {
  return plants.map((plant) => serializePlant(plant)).join(',');
}

/** The JSON text of the pages the service's cache hands out again, so they are serialized once. */
const sharedPageBodies = new WeakMap<Page, string>();

export function pageBody(page: Page): string {
  let body = page.shared ? sharedPageBodies.get(page) : undefined;
  if (body === undefined) {
    body = `[${jsonElements(page.plants)}]`;
    if (page.shared) sharedPageBodies.set(page, body);
  }
  return body;
}

/** The whole list as one JSON array, written chunk by chunk as rows come from storage. */
export async function* jsonArray(chunks: AsyncIterable<Plant[]>): AsyncIterable<string> {
  let separator = '';
  yield '[';
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    yield separator + jsonElements(chunk);
    separator = ',';
  }
  yield ']';
}
