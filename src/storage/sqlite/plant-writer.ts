import type Database from 'better-sqlite3';
import { STORED_PLANT_COLUMNS } from '../../plant-fields.js';
import { foldCase } from '../case-fold.js';
import { applySync, firstConflict, itemsOf } from '../changes.js';
import { PLANT_TABLE_COLUMNS, PLANT_UPDATE_COLUMNS, plantRow } from '../plant-rows.js';
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
    `INSERT INTO plants (${PLANT_TABLE_COLUMNS.join(', ')})
     VALUES (${PLANT_TABLE_COLUMNS.map((column) => `@${column}`).join(', ')}) ON CONFLICT DO NOTHING`,
  );
  const selectOne = db
    .prepare(`SELECT ${STORED_PLANT_COLUMNS.join(', ')} FROM plants WHERE account = ? AND id = ?`)
    .safeIntegers(true);
  const update = db.prepare(
    `UPDATE plants SET ${PLANT_UPDATE_COLUMNS.map((column) => `${column} = @${column}`).join(', ')}
     WHERE account = @account AND id = @id`,
  );
  const remove = db.prepare('DELETE FROM plants WHERE account = ? AND id = ?');
  const searchWrites = searchIndex(db);
  const outboxQueue = outbox(db);
  const feedQueue = feedQueues(db, feed);
  const tick = clockTick(db);

  const current = (account: string, id: bigint) => selectOne.get(account, id) as StoredPlant | undefined;

  /** One change, its steps (changes.ts) done in this transaction. */
  function applyOne(change: PlantChange, events: PlantEvents, search: SearchIndex): ChangeOutcome {
    if (change.kind === 'create-many') return applyMany(change, events, search);
    const { account } = change;
    return applySync(change, (step) => {
      switch (step.kind) {
        case 'insert': {
          const row = plantRow(account, step.plant);
          const inserted = insert.run(row).changes === 1;
          if (inserted) search.add(account, step.plant.id, row.name_folded as string);
          return inserted;
        }
        case 'read':
          return current(account, step.id);
        case 'delete':
          remove.run(account, step.plant.id);
          return search.remove(account, step.plant.id);
        case 'update': {
          const row = plantRow(account, step.after);
          update.run(row);
          const { before, after } = step;
          if (after.name !== before.name)
            search.rename(account, after.id, foldCase(before.name), row.name_folded as string);
          return;
        }
        case 'event':
          return events.queue(account, step.type, step.eventId, step.plant);
      }
    });
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
