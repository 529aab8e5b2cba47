import type { PlantChange, PlantEventType, PlantRecord, StoredPlant } from './types.js';

/** The engine-independent rules of applying a change: both engines call these inside their transaction. */

/** The plant after an update, or null when the update changes no field (no new revision, no event). */
export function updated(current: StoredPlant, change: Extract<PlantChange, { kind: 'update' }>): StoredPlant | null {
  const name = change.set.name ?? current.name;
  const tag = change.set.tag === undefined ? current.tag : change.set.tag;
  if (name === current.name && tag === current.tag) return null;
  return { id: current.id, name, tag, revision: change.revision };
}

export const EVENT_OF: Record<PlantChange['kind'], PlantEventType> = {
  create: 'plant.created',
  update: 'plant.updated',
  delete: 'plant.deleted',
};

/** The webhook body: the plant as `NewPlant` JSON, its id exact over int64 (written as a literal, never a double). */
export function newPlantJson(plant: PlantRecord): string {
  const tag = plant.tag === null ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${tag}}`;
}
