import type { PlantChange, PlantRecord, Precondition, StoredPlant } from './types/plants.js';

/** The engine-independent rules of applying a change: both engines call these inside their transaction. */

/** Whether `current`, the plant as the transaction sees it, satisfies the precondition (none: it does). */
export function preconditionHolds(precondition: Precondition | undefined, current: StoredPlant): boolean {
  if (precondition === undefined || precondition === 'any') return true;
  return precondition.revisions.includes(current.revision);
}

/** The plant after an update, or null when the update changes no field (no new revision, no event). */
export function updated(current: StoredPlant, change: Extract<PlantChange, { kind: 'update' }>): StoredPlant | null {
  const name = change.set.name ?? current.name;
  const tag = change.set.tag === undefined ? current.tag : change.set.tag;
  if (name === current.name && tag === current.tag) return null;
  return { id: current.id, name, tag, revision: change.revision };
}

/** The `create` changes a `create-many` is made of: each item is written as one create is. */
export function itemsOf(
  change: Extract<PlantChange, { kind: 'create-many' }>,
): Array<Extract<PlantChange, { kind: 'create' }>> {
  return change.plants.map((plant, i) => ({
    kind: 'create',
    account: change.account,
    plant,
    eventId: change.eventIds[i]!,
  }));
}

/** The first item that the account holds under its id with a different name or tag, or -1. */
export function firstConflict(items: PlantRecord[], stored: Array<PlantRecord | undefined>): number {
  return items.findIndex((item, i) => {
    const current = stored[i];
    return current !== undefined && (current.name !== item.name || current.tag !== item.tag);
  });
}
