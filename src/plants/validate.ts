import { HttpError } from '../errors.js';
import type { ExactValidator } from '../http/exact-validator.js';
import { LIMITS } from '../limits.js';
import { NewPlant, NewPlants, PlantIdParams, PlantPatch } from '../schemas.js';
import { PLANT_ORDERS, type PlantOrder } from '../storage/plant-query.js';
import { ListQuery } from './list-query.js';

/**
 * The exact checks behind the `NewPlant` and `ListQuery` schemas. Ajv cannot do these: it
 * coerces types ("5" -> 5, "" -> 0) and cannot see a 64-bit integer. The limits come from
 * `LIMITS`, the same constants the schemas (and so the OpenAPI document) show.
 */

function bad(message: string): never {
  throw new HttpError(400, message);
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

function checkText(field: string, value: unknown, minLength: number): string {
  if (typeof value !== 'string') bad(`${field} must be a string`);
  if (value.length < minLength) bad(`${field} must not be empty`);
  if (value.length > LIMITS.textLength && codePoints(value) > LIMITS.textLength) {
    bad(`${field} must be at most ${LIMITS.textLength} characters`);
  }
  if (value.includes('\u0000')) bad(`${field} must not contain U+0000`);
  if (!value.isWellFormed()) bad(`${field} must be valid Unicode (it has an unpaired surrogate)`);
  return value;
}

function inInt64Range(id: bigint): bigint {
  if (id < LIMITS.int64Min || id > LIMITS.int64Max) bad('id must be within the signed 64-bit integer range');
  return id;
}

function checkId(value: unknown): bigint {
  if (value === undefined) bad('id is required');
  if (typeof value === 'bigint') return inInt64Range(value);
  if (typeof value !== 'number') bad('id must be an integer');
  // The body's numbers are read exactly (http/exact-number.ts): an integer beyond ±2^53 is a
  // BigInt, one too long to hold is ±Infinity, and a fraction is never mistaken for an integer.
  if (value === Infinity || value === -Infinity) bad('id must be within the signed 64-bit integer range');
  if (!Number.isSafeInteger(value)) bad('id must be an integer');
  return BigInt(value);
}

function jsonObject(body: unknown, what = 'request body'): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) bad(`${what} must be a JSON object`);
  return body as Record<string, unknown>;
}

/** One plant to create; `at` names it inside a batch (`[3]`), so that each message names `[3].name`. */
export function validateNewPlant(body: unknown, at = ''): NewPlant {
  const fields = jsonObject(body, at === '' ? 'request body' : at);
  const field = (name: string) => (at === '' ? name : `${at}.${name}`);
  const id = withField(field('id'), 'id', () => checkId(fields.id));
  if (fields.name === undefined) bad(`${field('name')} is required`);
  const name = checkText(field('name'), fields.name, 1);
  if (fields.tag === undefined) return { id, name };
  return { id, name, tag: checkText(field('tag'), fields.tag, 0) };
}

/** checkId's messages begin with `id`; inside a batch they name the item's id instead. */
function withField<T>(field: string, plain: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (field === plain || !(error instanceof HttpError)) throw error;
    throw new HttpError(400, field + error.message.slice(plain.length));
  }
}

/**
 * The body of `POST /plants/batch`: 1 to 1,000 plants, each judged as one create, the first bad
 * one named by its index; then an id given twice with different content is a 400 naming the later item.
 */
export function validateNewPlants(body: unknown): NewPlant[] {
  if (!Array.isArray(body) || body.length < 1 || body.length > LIMITS.batchItems) {
    bad(`request body must be a JSON array of 1 to ${LIMITS.batchItems} plants`);
  }
  const plants = body.map((item, i) => validateNewPlant(item, `[${i}]`));
  const seen = new Map<bigint, number>();
  for (const [i, plant] of plants.entries()) {
    const first = seen.get(plant.id);
    if (first === undefined) {
      seen.set(plant.id, i);
      continue;
    }
    const earlier = plants[first]!;
    if (earlier.name !== plant.name || earlier.tag !== plant.tag) {
      bad(`[${i}].id repeats the id of [${first}] with a different name or tag`);
    }
  }
  return plants;
}

/** A merge patch: `name` may change but not go, `tag: null` removes the tag, `id` must be the path's (checked by the service). */
export function validatePlantPatch(body: unknown): PlantPatch {
  const fields = jsonObject(body);
  const patch: PlantPatch = {};
  if (fields.id !== undefined) patch.id = checkId(fields.id);
  if (fields.name === null) bad('name cannot be removed (a plant always has a name)');
  if (fields.name !== undefined) patch.name = checkText('name', fields.name, 1);
  if (fields.tag !== undefined) patch.tag = fields.tag === null ? null : checkText('tag', fields.tag, 0);
  return patch;
}

const CANONICAL_INTEGER = /^-?(?:0|[1-9]\d*)$/;

/** `{id}` of /plants/{id}: canonical decimal only (no `007`, `+5`, `1.0`, `1e3`, `-0`), exact over int64. */
export function validatePlantIdParams(params: unknown): PlantIdParams {
  const text = (params as { id?: unknown } | null)?.id;
  if (typeof text !== 'string' || !CANONICAL_INTEGER.test(text) || text === '-0') {
    bad('id must be an integer in canonical decimal form (an optional -, digits, no leading zero)');
  }
  // Past 20 characters it is out of range whatever the digits: BigInt is spared a long string.
  return { id: inInt64Range(text.length > 20 ? LIMITS.int64Max + 1n : BigInt(text)) };
}

const UNSIGNED_INTEGER = /^\d+$/;

function single(name: string, value: unknown): string | undefined {
  if (Array.isArray(value)) bad(`${name} must be given at most once`);
  return value as string | undefined;
}

function checkTags(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const tags = [value].flat() as string[];
  if (tags.length > LIMITS.tagFilters) bad(`tag may be given at most ${LIMITS.tagFilters} times`);
  for (const tag of tags) checkText('tag', tag, 0);
  return tags;
}

function checkSort(value: string | undefined): PlantOrder | undefined {
  if (value === undefined) return undefined;
  if (!PLANT_ORDERS.includes(value as PlantOrder)) bad(`sort must be one of ${PLANT_ORDERS.join(', ')}`);
  return value as PlantOrder;
}

export function validateListQuery(query: unknown): ListQuery {
  const params = (query ?? {}) as Record<string, unknown>;
  const limitText = single('limit', params.limit);
  const cursor = single('cursor', params.cursor);
  const q = single('q', params.q);
  const sort = checkSort(single('sort', params.sort));
  const tag = checkTags(params.tag);
  const result: ListQuery = {};
  if (tag !== undefined) result.tag = tag;
  if (q !== undefined) result.q = checkText('q', q, 1);
  if (sort !== undefined) result.sort = sort;
  if (limitText !== undefined) {
    if (!UNSIGNED_INTEGER.test(limitText) || Number(limitText) > LIMITS.limitMax) {
      bad(`limit must be an integer from 0 to ${LIMITS.limitMax}`);
    }
    result.limit = Number(limitText);
  }
  if (cursor !== undefined) result.cursor = cursor;
  return result;
}

/** Each input schema with the exact check behind it, for the one validator compiler (contract/validation.ts). */
export const PLANT_VALIDATORS: readonly ExactValidator[] = [
  { schema: NewPlant, validate: (body) => validateNewPlant(body) },
  { schema: NewPlants, validate: validateNewPlants },
  { schema: ListQuery, validate: validateListQuery },
  { schema: PlantPatch, validate: validatePlantPatch },
  { schema: PlantIdParams, validate: validatePlantIdParams },
];
