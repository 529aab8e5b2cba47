import type Database from 'better-sqlite3';
import { EVENT_OF } from '../../events/plant-event.js';
import { foldCase } from '../case-fold.js';
import { firstConflict, itemsOf, preconditionHolds, updated } from '../changes.js';
import type { PlantListing } from '../plant-query.js';
import type { Storage } from '../types.js';
import type { ChangeOutcome, PlantChange, StoredPlant } from '../types/plants.js';
import { bothQueues } from './events.js';
import { outbox, type EventQueue } from './outbox.js';
import { sqlitePlantListing } from './plant-listing.js';
import { searchIndex } from './search-index.js';

const STREAM_CHUNK_ROWS = 1000;

type PlantStorage = Pick<
  Storage,
  'applyChanges' | 'getPlant' | 'listPlants' | 'streamPlants' | 'countPlants' | 'plantsVersion'
>;

/** `feedQueue` gives each write transaction the change feed's queue (sqlite/events.ts). */
export function sqlitePlants(db: Database.Database, feedQueue: () => EventQueue): PlantStorage {
  const insert = db.prepare(
    'INSERT INTO plants (account, id, name, tag, revision, name_folded) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const selectOne = db
    .prepare('SELECT id, name, tag, revision FROM plants WHERE account = ? AND id = ?')
    .safeIntegers(true);
  const search = searchIndex(db);
  const update = db.prepare(
    'UPDATE plants SET name = ?, tag = ?, revision = ?, name_folded = ? WHERE account = ? AND id = ?',
  );
  const remove = db.prepare('DELETE FROM plants WHERE account = ? AND id = ?');
  const listing = sqlitePlantListing(db);
  const eventQueue = outbox(db);

  // data_version moves when another connection (another process, or the webhook deliverer's own
  // connection) commits, and only then: this connection's own commits leave it (and
  // `plantsVersion`) where it is; the service tells its page cache which accounts it wrote.
  const dataVersion = db.prepare('PRAGMA data_version').pluck();
  let seenDataVersion = dataVersion.get();
  let version = 0;

  const current = (account: string, id: bigint) => selectOne.get(account, id) as StoredPlant | undefined;

  function applyOne(change: PlantChange, events: EventQueue): ChangeOutcome {
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
    if (change.kind === 'create-many') return applyMany(change, events);
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
  function applyMany(change: Extract<PlantChange, { kind: 'create-many' }>, events: EventQueue): ChangeOutcome {
    const index = firstConflict(
      change.plants,
      change.plants.map((plant) => current(change.account, plant.id)),
    );
    if (index !== -1) return { status: 'conflict', index };
    const outcomes = itemsOf(change).map((create) => applyOne(create, events));
    return {
      status: 'all-applied',
      plants: outcomes.map((outcome) => (outcome as { plant: StoredPlant }).plant),
      created: outcomes.map((outcome) => outcome.status === 'applied'),
    };
  }

  const applyAll = db.transaction((changes: PlantChange[]) => {
    const events = bothQueues(eventQueue(), feedQueue());
    const outcomes = changes.map((change) => applyOne(change, events));
    events.flush();
    return outcomes;
  });

  return {
    async applyChanges(changes) {
      return applyAll.immediate(changes);
    },
    async getPlant(account, id) {
      return current(account, id) ?? null;
    },
    plantsVersion() {
      const now = dataVersion.get();
      if (now !== seenDataVersion) {
        seenDataVersion = now;
        version++;
      }
      return version;
    },
    async listPlants(account, query, limit) {
      return listing.page(account, query, limit);
    },
    async countPlants(account, filter) {
      return listing.count(account, filter);
    },
    async *streamPlants(account, query) {
      // Keyset chunks, each its own short read: a long listing never holds the connection.
      let chunkListing: PlantListing = query;
      for (;;) {
        const rows = listing.page(account, chunkListing, STREAM_CHUNK_ROWS);
        if (rows.length > 0) yield rows;
        if (rows.length < STREAM_CHUNK_ROWS) return;
        const last = rows[rows.length - 1]!;
        chunkListing = { ...chunkListing, after: { id: last.id, name: last.name } };
      }
    },
  };
}
