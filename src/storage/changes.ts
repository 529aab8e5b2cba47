import type { PlantChange, StoredPlant } from './types/plants.js';

/** The engine-independent rules of applying a change: both engines call these inside their transaction. */

/** The plant after an update, or null when the update changes no field (no new revision, no event). */
export function updated(current: StoredPlant, change: Extract<PlantChange, { kind: 'update' }>): StoredPlant | null {
  const name = change.set.name ?? current.name;
  const tag = change.set.tag === undefined ? current.tag : change.set.tag;
  if (name === current.name && tag === current.tag) return null;
  return { id: current.id, name, tag, revision: change.revision };
}
