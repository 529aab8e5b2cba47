import type Database from 'better-sqlite3';
import { EVENT_OF } from '../../events/plant-event.js';
import { foldCase } from '../case-fold.js';
import { firstConflict, itemsOf, preconditionHolds, updated } from '../changes.js';
import type { ChangeOutcome, PlantChange, StoredPlant } from '../types/plants.js';
import { bothQueues, feedQueues, type PlantEvents } from './events.js';
import { outbox } from './outbox.js';
import { clockTick, type OwnTicks } from './plants-clock.js';
import { searchIndex, type SearchIndex } from './search-index.js';

/** Applies one group-commit batch in one durable transaction (PlantStorage.applyChanges). */
export type WriteTransaction = (changes: PlantChange[]) => ChangeOutcome[];

/** Whether the outcome wrote a plant (and so the transaction ticks the plants' clock). */
const wrotePlants = (outcome: ChangeOutcome) =>
  outcome.status === 'applied' || (outcome.status === 'all-applied' && outcome.created.includes(true));

/**
 * The write transaction of the embedded store, on connection `db`: the plants, their trigram index
 * (search-index.ts), the webhook outbox (outbox.ts) and the change feed's events (events.ts, unless
 * `feed` is false), all in one BEGIN IMMEDIATE transaction. The same code runs on the main thread
 * (`--sqlite-writer inline`, and `:memory:` stores) and in the writer thread (writer-worker.ts).
 * Each commit that wrote plants ticks the plants' clock and is published in `own` (plants-clock.ts).
 */
export function plantWriter(db: Database.Database, feed: boolean, own: OwnTicks): WriteTransaction {
  const insert = db.prepare(
    'INSERT INTO plants (account, id, name, tag, revision, name_folded) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const selectOne = db
    .prepare('SELECT id, name, tag, revision FROM plants WHERE account = ? AND id = ?')
    .safeIntegers(true);
  const update = db.prepare(
    'UPDATE plants SET name = ?, tag = ?, revision = ?, name_folded = ? WHERE account = ? AND id = ?',
  );
  const remove = db.prepare('DELETE FROM plants WHERE account = ? AND id = ?');
  const searchWrites = searchIndex(db);
  const outboxQueue = outbox(db);
  const feedQueue = feedQueues(db, feed);
  const tick = clockTick(db);

  const current = (account: string, id: bigint) => selectOne.get(account, id) as StoredPlant | undefined;

  function applyOne(change: PlantChange, events: PlantEvents, search: SearchIndex): ChangeOutcome {
    const { account } = change;
    if (change.kind === 'create') {
      const { plant } = change;
      const folded = foldCase(plant.name);
      if (insert.run(account, plant.id, plant.name, plant.tag, plant.revision, folded).changes === 0) {
        return { status: 'unchanged', plant: current(account, plant.id)! };
      }
      search.add(account, plant.id, folded);
      events.queue(account, EVENT_OF.create, change.eventId, plant);
      return { status: 'applied', plant };
    }
    if (change.kind === 'create-many') return applyMany(change, events, search);
    const before = current(account, change.id);
    if (before === undefined) return { status: 'missing' };
    if (!preconditionHolds(change.precondition, before)) return { status: 'precondition-failed' };
    if (change.kind === 'delete') {
      remove.run(account, change.id);
      search.remove(account, change.id);
      events.queue(account, EVENT_OF.delete, change.eventId, before);
      return { status: 'applied', plant: before };
    }
    const after = updated(before, change);
    if (after === null) return { status: 'unchanged', plant: before };
    const folded = foldCase(after.name);
    update.run(after.name, after.tag, after.revision, folded, account, after.id);
    if (after.name !== before.name) search.rename(account, after.id, foldCase(before.name), folded);
    events.queue(account, EVENT_OF.update, change.eventId, after);
    return { status: 'applied', plant: after };
  }

  /**
   * Judged whole before anything is written: the transaction holds the write lock, so what is read
   * here is what the writes meet. Then each item goes through `applyOne` as one create does.
   */
  function applyMany(
    change: Extract<PlantChange, { kind: 'create-many' }>,
    events: PlantEvents,
    search: SearchIndex,
  ): ChangeOutcome {
    const index = firstConflict(
      change.plants,
      change.plants.map((plant) => current(change.account, plant.id)),
    );
    if (index !== -1) return { status: 'conflict', index };
    const outcomes = itemsOf(change).map((create) => applyOne(create, events, search));
    return {
      status: 'all-applied',
      plants: outcomes.map((outcome) => (outcome as { plant: StoredPlant }).plant),
      created: outcomes.map((outcome) => outcome.status === 'applied'),
    };
  }

  const applyAll = db.transaction((changes: PlantChange[]) => {
    const events = bothQueues(outboxQueue(), feedQueue());
    const search = searchWrites();
    const outcomes = changes.map((change) => applyOne(change, events, search));
    events.flush();
    search.flush();
    return { outcomes, clock: outcomes.some(wrotePlants) ? tick() : null };
  });

  return (changes) => {
    return own.writing(() => {
      const { outcomes, clock } = applyAll.immediate(changes);
      if (clock !== null) own.committed(clock);
      return outcomes;
    });
  };
}
