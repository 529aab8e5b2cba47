import { HttpError } from '../errors.js';
import type { ExactValidator } from '../http/exact-validator.js';
import { LIMITS } from '../limits.js';
import { PLANT_FIELD_NAMES, PLANT_FIELDS, samePlant } from '../plant-fields.js';
import { NewPlant, NewPlants, PlantIdParams, PlantPatch } from '../schemas.js';
import { PLANT_FILTER_KEYS, PLANT_ORDERS, type PlantOrder } from '../storage/plant-query.js';
import { bad, CANONICAL_INTEGER, checkText, single } from './checks.js';
import { FILTER_PARAMS, ListQuery } from './list-query.js';
import { checkSelect, SelectQuery, validateSelectQuery } from './select.js';

/**
 * The exact checks behind the `NewPlant` and `ListQuery` schemas. Ajv cannot do these: it
 * coerces types ("5" -> 5, "" -> 0) and cannot see a 64-bit integer. The limits come from
 * `LIMITS`, the same constants the schemas (and so the OpenAPI document) show.
 */

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
  const plant: Record<string, unknown> = { id: withField(field('id'), 'id', () => checkId(fields.id)) };
  for (const [name, { required, minLength }] of Object.entries(PLANT_FIELDS)) {
    if (fields[name] === undefined) {
      if (required) bad(`${field(name)} is required`);
      continue;
    }
    plant[name] = checkText(field(name), fields[name], minLength);
  }
  return plant as NewPlant;
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
    if (!samePlant(earlier, plant)) {
      bad(`[${i}].id repeats the id of [${first}] with a different ${PLANT_FIELD_NAMES.join(' or ')}`);
    }
  }
  return plants;
}

/**
 * A merge patch: a required field (`name`) may change but not go, null removes an optional one
 * (`tag: null` removes the tag), `id` must be the path's (checked by the service).
 */
export function validatePlantPatch(body: unknown): PlantPatch {
  const fields = jsonObject(body);
  const patch: Record<string, unknown> = {};
  if (fields.id !== undefined) patch.id = checkId(fields.id);
  for (const [name, { required, minLength }] of Object.entries(PLANT_FIELDS)) {
    const value = fields[name];
    if (value === null && required) bad(`${name} cannot be removed (a plant always has a ${name})`);
    if (value !== undefined) patch[name] = value === null ? null : checkText(name, value, minLength);
  }
  return patch as PlantPatch;
}

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

function checkSort(value: string | undefined): PlantOrder | undefined {
  if (value === undefined) return undefined;
  if (!PLANT_ORDERS.includes(value as PlantOrder)) bad(`sort must be one of ${PLANT_ORDERS.join(', ')}`);
  return value as PlantOrder;
}

/**
 * Each parameter's shape first (given once where it must be), in the order of the parameters, then
 * the sort and the selection, then each filter's value (list-query.ts's FILTER_PARAMS, so that no filter is left out).
 */
export function validateListQuery(query: unknown): ListQuery {
  const params = (query ?? {}) as Record<string, unknown>;
  const limitText = single('limit', params.limit);
  const cursor = single('cursor', params.cursor);
  const filters = PLANT_FILTER_KEYS.map((key) => {
    const { name, repeatable } = FILTER_PARAMS[key];
    return [key, repeatable ? params[name] : single(name, params[name])] as const;
  });
  const sort = checkSort(single('sort', params.sort));
  const select = checkSelect(params.select);
  const result: Record<string, unknown> = {};
  for (const [key, raw] of filters) {
    if (raw !== undefined) result[FILTER_PARAMS[key].name] = FILTER_PARAMS[key].check(raw as never);
  }
  if (sort !== undefined) result.sort = sort;
  if (select !== undefined) result.select = select.join(',');
  if (limitText !== undefined) {
    if (!UNSIGNED_INTEGER.test(limitText) || Number(limitText) > LIMITS.limitMax) {
      bad(`limit must be an integer from 0 to ${LIMITS.limitMax}`);
    }
    result.limit = Number(limitText);
  }
  if (cursor !== undefined) result.cursor = cursor;
  return result as ListQuery;
}

/** Each input schema with the exact check behind it, for the one validator compiler (contract/validation.ts). */
export const PLANT_VALIDATORS: readonly ExactValidator[] = [
  { schema: NewPlant, validate: (body) => validateNewPlant(body) },
  { schema: NewPlants, validate: validateNewPlants },
  { schema: ListQuery, validate: validateListQuery },
  { schema: PlantPatch, validate: validatePlantPatch },
  { schema: PlantIdParams, validate: validatePlantIdParams },
  { schema: SelectQuery, validate: validateSelectQuery },
];
