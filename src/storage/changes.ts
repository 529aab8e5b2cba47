import { EVENT_OF, type PlantEventType } from '../events/plant-event.js';
import { samePlant, withChanges } from '../plant-fields.js';
import type { ChangeOutcome, PlantChange, PlantRecord, Precondition, StoredPlant } from './types/plants.js';

/** The engine-independent rules of applying a change: both engines call these inside their transaction. */

/** Whether `current`, the plant as the transaction sees it, satisfies the precondition (none: it does). */
function preconditionHolds(precondition: Precondition | undefined, current: StoredPlant): boolean {
  if (precondition === undefined || precondition === 'any') return true;
  return precondition.revisions.includes(current.revision);
}

/** The plant after an update, or null when the update changes no field (no new revision, no event). */
function updated(current: StoredPlant, change: Extract<PlantChange, { kind: 'update' }>): StoredPlant | null {
  const after = withChanges(current, change.set);
  return samePlant(after, current) ? null : { ...after, revision: change.revision };
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

/** The first item that the account holds under its id as a different plant, or -1. */
export function firstConflict(items: PlantRecord[], stored: Array<PlantRecord | undefined>): number {
  return items.findIndex((item, i) => {
    const current = stored[i];
    return current !== undefined && !samePlant(current, item);
  });
}

type One = Exclude<PlantChange, { kind: 'create-many' }>;

/**
 * What applying one change asks of an engine, in order, inside its transaction; each step's
 * answer is what `changeSteps` receives back: `insert` (the plant, unless its id is taken) answers
 * whether it went in; `read` answers the plant as it is (locked for the rest of the transaction where
 * the engine locks rows), or undefined; `delete`, `update` and `event` answer nothing.
 */
export type ChangeStep =
  | { kind: 'insert'; plant: StoredPlant }
  | { kind: 'read'; id: bigint }
  | { kind: 'delete'; plant: StoredPlant }
  | { kind: 'update'; before: StoredPlant; after: StoredPlant }
  | { kind: 'event'; type: PlantEventType; eventId: string; plant: StoredPlant };

/**
 * The control flow of one create, update or delete: it yields the steps and returns the outcome.
 * SQLite runs them synchronously (`applySync`), PostgreSQL its updates and deletes awaiting each
 * (`applyAsync`: its creates, alone or many, go through postgres/plant-writes.ts's createPlants);
 * what each step does in SQL is the engine's.
 */
function* changeSteps(change: One): Generator<ChangeStep, ChangeOutcome, unknown> {
  const event = (plant: StoredPlant): ChangeStep => ({
    kind: 'event',
    type: EVENT_OF[change.kind],
    eventId: change.eventId,
    plant,
  });
  if (change.kind === 'create') {
    const { plant } = change;
    if (yield { kind: 'insert', plant }) {
      yield event(plant);
      return { status: 'applied', plant };
    }
    return { status: 'unchanged', plant: (yield { kind: 'read', id: plant.id }) as StoredPlant };
  }
  const before = (yield { kind: 'read', id: change.id }) as StoredPlant | undefined;
  if (before === undefined) return { status: 'missing' };
  if (!preconditionHolds(change.precondition, before)) return { status: 'precondition-failed' };
  if (change.kind === 'delete') {
    yield { kind: 'delete', plant: before };
    yield event(before);
    return { status: 'applied', plant: before };
  }
  const after = updated(before, change);
  if (after === null) return { status: 'unchanged', plant: before };
  yield { kind: 'update', before, after };
  yield event(after);
  return { status: 'applied', plant: after };
}

export function applySync(change: One, perform: (step: ChangeStep) => unknown): ChangeOutcome {
  const steps = changeSteps(change);
  for (let next = steps.next(); ;) {
    if (next.done) return next.value;
    next = steps.next(perform(next.value));
  }
}

type Edit = Exclude<One, { kind: 'create' }>;

export async function applyAsync(
  change: Edit,
  perform: (step: Exclude<ChangeStep, { kind: 'insert' }>) => Promise<unknown>,
): Promise<ChangeOutcome> {
  const steps = changeSteps(change);
  for (let next = steps.next(); ;) {
    if (next.done) return next.value;
    // Only a create inserts.
    next = steps.next(await perform(next.value as Exclude<ChangeStep, { kind: 'insert' }>));
  }
}
