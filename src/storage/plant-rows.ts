import { fieldsOf, PLANT_FIELD_NAMES, type PlantFieldName } from '../plant-fields.js';
import { foldCase } from './case-fold.js';
import type { StoredPlant } from './types/plants.js';

/**
 * The `plants` table as both engines write it, derived from the plant's fields (plant-fields.ts):
 * the account and id, each field, the revision, and `name_folded`, the case-folded name that
 * search reads (case-fold.ts), written beside the name.
 */

type FieldKinds = { [K in PlantFieldName]: 'text' };

/** Every column and how `copy` carries it (copy.ts's ColumnKind), in the order statements name them. */
export const PLANTS_TABLE = {
  account: 'text',
  id: 'int64',
  ...(Object.fromEntries(PLANT_FIELD_NAMES.map((field) => [field, 'text'])) as FieldKinds),
  revision: 'int64',
  name_folded: 'text',
} as const;

export type PlantColumn = keyof typeof PLANTS_TABLE;

export const PLANT_TABLE_COLUMNS = Object.keys(PLANTS_TABLE) as PlantColumn[];

/** What an update writes: the fields, the revision and the folded name. */
export const PLANT_UPDATE_COLUMNS = PLANT_TABLE_COLUMNS.filter((column) => column !== 'account' && column !== 'id');

/** The plant's row, by column (a field the plant does not set is null). */
export function plantRow(account: string, plant: StoredPlant): Record<PlantColumn, string | bigint | null> {
  return {
    account,
    id: plant.id,
    ...fieldsOf(plant),
    revision: plant.revision,
    name_folded: foldCase(plant.name),
  };
}
