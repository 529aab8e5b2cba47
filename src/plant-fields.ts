import fastJson from 'fast-json-stringify';
import { Plant, type NewPlant, type PlantPatch } from './schemas.js';

/**
 * A plant's fields beyond its id, once. Each is a text column of the same name in both engines'
 * `plants` table; a required one always has a value, an optional one may be null (absent from the
 * JSON). From this table follow: the stored record's type, both engines' column lists and row
 * values, `copy`'s columns, the page cache's cost, the `Plant` a response and an event carry, the
 * "same plant?" test, an update's effect, and which field a merge patch cannot remove.
 * `satisfies` ties it to the `Plant` schema: a field in one and not the other does not compile.
 * Adding a field: docs/fields-and-filters.md (the files, and which test catches each one left out).
 */
export const PLANT_FIELDS = {
  name: { required: true },
  tag: { required: false },
} as const satisfies Record<keyof Plant, { required: boolean }>;

export type PlantFieldName = keyof typeof PLANT_FIELDS;

export const PLANT_FIELD_NAMES = Object.keys(PLANT_FIELDS) as PlantFieldName[];

/** The input schemas name every field too (create sets it, a merge patch changes it): else this does not compile. */
type Names<Schema> = [Exclude<PlantFieldName, keyof Schema>] extends [never] ? true : never;
const inputsNameEveryField: Names<NewPlant> & Names<PlantPatch> = true;
void inputsNameEveryField;

type RequiredField = {
  [K in PlantFieldName]: (typeof PLANT_FIELDS)[K]['required'] extends true ? K : never;
}[PlantFieldName];

/**
 * The fields as storage keeps them: an optional field without a value is null (storage reads it
 * so) or absent (so that code writing a plant need not name a field it does not set).
 */
export type PlantFields = { [K in RequiredField]: string } & {
  [K in Exclude<PlantFieldName, RequiredField>]?: string | null;
};

/** The columns of a plant as a listing reads it, in order; a stored plant adds its revision. */
export const PLANT_COLUMNS = ['id', ...PLANT_FIELD_NAMES] as const;
export const STORED_PLANT_COLUMNS = [...PLANT_COLUMNS, 'revision'] as const;

/** The fields of a plant as given (a `NewPlant`): an absent optional field is null. */
export function fieldsOf(plant: { [K in PlantFieldName]?: string | null }): Required<PlantFields> {
  return Object.fromEntries(PLANT_FIELD_NAMES.map((field) => [field, plant[field] ?? null])) as Required<PlantFields>;
}

/** Whether two plants under one id are the same plant: every field equal (a retry, not a conflict). */
export function samePlant(a: PlantFields, b: PlantFields): boolean {
  return PLANT_FIELD_NAMES.every((field) => (a[field] ?? null) === (b[field] ?? null));
}

/** The fields after a change that sets some of them (absent: as they were). */
export function withChanges<T extends PlantFields>(current: T, set: Partial<PlantFields>): T {
  const after = { ...current };
  for (const field of PLANT_FIELD_NAMES) if (set[field] !== undefined) (after as PlantFields)[field] = set[field]!;
  return after;
}

/** The plant as every response (and event) shows it: a field without a value is omitted, never null. */
export function toPlant(fields: PlantFields): Plant {
  const plant: Record<string, string> = {};
  for (const field of PLANT_FIELD_NAMES) {
    const value = fields[field];
    if (value !== null && value !== undefined) plant[field] = value;
  }
  return plant as Plant;
}

/** The JSON text of a `Plant`, compiled once from its schema: responses and events write plants with it. */
export const serializePlant: (plant: Plant) => string = fastJson(Plant);

/** A plant's fields' characters, for what holding it in memory costs (the page cache's bound). */
export function plantCharacters(plant: PlantFields): number {
  let characters = 0;
  for (const field of PLANT_FIELD_NAMES) characters += plant[field]?.length ?? 0;
  return characters;
}
