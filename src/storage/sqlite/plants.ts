import type Database from 'better-sqlite3';
import { EVENT_OF } from '../../events/plant-event.js';
import { updated } from '../changes.js';
import type { Storage } from '../types.js';
import type { ChangeOutcome, PlantChange, PlantRecord, StoredPlant } from '../types/plants.js';
import { bothQueues } from './events.js';
import { outbox, type EventQueue } from './outbox.js';

const STREAM_CHUNK_ROWS = 1000;

type PageRow = [id: bigint, name: string, tag: string | null];

type PlantStorage = Pick<Storage, 'applyChanges' | 'getPlant' | 'listPlants' | 'streamPlants' | 'plantsVersion'>;

/** `feedQueue` gives each write transaction the change feed's queue (sqlite/events.ts). */
export function sqlitePlants(db: Database.Database, feedQueue: () => EventQueue): PlantStorage {
  const insert = db.prepare(
    'INSERT INTO plants (account, id, name, tag, revision) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const selectOne = db
    .prepare('SELECT id, name, tag, revision FROM plants WHERE account = ? AND id = ?')
    .safeIntegers(true);
  const update = db.prepare('UPDATE plants SET name = ?, tag = ?, revision = ? WHERE account = ? AND id = ?');
  const remove = db.prepare('DELETE FROM plants WHERE account = ? AND id = ?');
  // `LIMIT ? + 0`, not `LIMIT ?`: SQLite plans around a bare LIMIT parameter, so each new binding
  // made it compile the statement again (a third of a GET's time). Rows come as arrays (`raw`),
  // which better-sqlite3 builds much faster than objects.
  const selectPage = db
    .prepare('SELECT id, name, tag FROM plants WHERE account = ? AND id > ? ORDER BY id LIMIT ? + 0')
    .safeIntegers(true)
    .raw(true);
  const selectFirstPage = db
    .prepare('SELECT id, name, tag FROM plants WHERE account = ? ORDER BY id LIMIT ? + 0')
    .safeIntegers(true)
    .raw(true);
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
      if (insert.run(account, plant.id, plant.name, plant.tag, plant.revision).changes === 0) {
        return { status: 'unchanged', plant: current(account, plant.id)! };
      }
      events.queue(account, EVENT_OF.create, change.eventId, plant);
      return { status: 'applied', plant };
    }
    const before = current(account, change.id);
    if (before === undefined) return { status: 'missing' };
    if (change.precondition && !change.precondition(before)) return { status: 'precondition-failed' };
    if (change.kind === 'delete') {
      remove.run(account, change.id);
      events.queue(account, EVENT_OF.delete, change.eventId, before);
      return { status: 'applied', plant: before };
    }
    const after = updated(before, change);
    if (after === null) return { status: 'unchanged', plant: before };
    update.run(after.name, after.tag, after.revision, account, after.id);
    events.queue(account, EVENT_OF.update, change.eventId, after);
    return { status: 'applied', plant: after };
  }

  const applyAll = db.transaction((changes: PlantChange[]) => {
    const events = bothQueues(eventQueue(), feedQueue());
    const outcomes = changes.map((change) => applyOne(change, events));
    events.flush();
    return outcomes;
  });

  const page = (account: string, afterId: bigint | null, limit: number): PlantRecord[] => {
    const rows = (
      afterId === null ? selectFirstPage.all(account, limit) : selectPage.all(account, afterId, limit)
    ) as PageRow[];
    return rows.map(([id, name, tag]) => ({ id, name, tag }));
  };

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
    async listPlants(account, afterId, limit) {
      return page(account, afterId, limit);
    },
    async *streamPlants(account, afterId) {
      // Keyset chunks, each its own short read: a long listing never holds the connection.
      let after = afterId;
      for (;;) {
        const rows = page(account, after, STREAM_CHUNK_ROWS);
        if (rows.length > 0) yield rows;
        if (rows.length < STREAM_CHUNK_ROWS) return;
        after = rows[rows.length - 1]!.id;
      }
    },
  };
}
