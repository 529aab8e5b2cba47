import { HttpError } from '../errors.js';
import type { InputRules } from '../http/input-rules.js';
import { LIMITS } from '../limits.js';
import { PLANT_FIELD_NAMES, PLANT_FIELDS, samePlant } from '../plant-fields.js';
import { NewPlant, NewPlants, PlantIdParams, PlantPatch } from '../schemas.js';
import { ListQuery } from './list-query.js';
import { checkSelect, SelectQuery } from './select.js';

/**
 * What the plants' input schemas cannot say; their keywords are enforced from the schemas
 * themselves (http/schema-check.ts), and each rule here is said in words in its schema's description.
 */

/** An id given twice in one batch with a different plant: a 400 naming the later item. */
function distinctIds(plants: NewPlant[]): NewPlant[] {
  const seen = new Map<bigint, number>();
  for (const [i, plant] of plants.entries()) {
    const first = seen.get(plant.id);
    if (first === undefined) seen.set(plant.id, i);
    else if (!samePlant(plants[first]!, plant)) {
      throw new HttpError(
        400,
        `[${i}].id repeats the id of [${first}] with a different ${PLANT_FIELD_NAMES.join(' or ')}`,
      );
    }
  }
  return plants;
}

/** In a merge patch null removes a field; a required one cannot go. */
const cannotBeRemoved = Object.fromEntries(
  Object.entries(PLANT_FIELDS)
    .filter(([, { required }]) => required)
    .map(([name]) => [name, { messages: { null: `${name} cannot be removed (a plant always has a ${name})` } }]),
);

/** `select`'s pattern is checked by checkSelect, whose messages name the unknown or repeated field. */
const select = { select: { messages: { pattern: null }, check: checkSelect } };

const batchShape = `request body must be a JSON array of 1 to ${LIMITS.batchItems} plants`;

export const PLANT_INPUTS: readonly InputRules[] = [
  { schema: NewPlant },
  {
    schema: NewPlants,
    fields: {
      '': { messages: { type: batchShape, minItems: batchShape, maxItems: batchShape }, check: distinctIds },
    },
  },
  { schema: ListQuery, fields: select },
  { schema: PlantPatch, fields: cannotBeRemoved },
  { schema: PlantIdParams },
  { schema: SelectQuery, fields: select },
];
