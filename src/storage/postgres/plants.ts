import { EVENT_OF } from '../../events/plant-event.js';
import { foldCase } from '../case-fold.js';
import { preconditionHolds, updated } from '../changes.js';
import type { Storage } from '../types.js';
import type { ChangeOutcome, PlantChange, PlantRecord, StoredPlant } from '../types/plants.js';
import type { Sql, Tx } from './connection.js';
import { recordEvents, type QueuedEvent } from './outbox.js';
import { createAll, createMany, type RecordEvents } from './plant-creates.js';
import { postgresListing } from './plant-listing.js';

const STREAM_CHUNK_ROWS = 1000;

type Create = Extract<PlantChange, { kind: 'create' }>;
type PlantStorage = Pick<
  Storage,
  'applyChanges' | 'getPlant' | 'listPlants' | 'streamPlants' | 'countPlants' | 'plantsVersion'
>;

export interface FeedOptions {
  /** False (`--event-retention 0`): no change-feed events are written. */
  feed: boolean;
  /** Tests only: see recordEvents. */
  testCommitDelayMs: number;
}

/** One change of a mixed batch, in order; its event is queued once the batch is done. */
async function applyOne(tx: Tx, change: PlantChange, events: QueuedEvent[]): Promise<ChangeOutcome> {
  if (change.kind === 'create-many') return createMany(tx, change, events);
  const { account } = change;
  const event = (plant: PlantRecord) =>
    events.push({ account, type: EVENT_OF[change.kind], eventId: change.eventId, plant });
  if (change.kind === 'create') {
    const { plant } = change;
    const inserted = await tx`
      INSERT INTO plants (account, id, name, tag, revision, name_folded)
      VALUES (${account}, ${plant.id}, ${plant.name}, ${plant.tag}, ${plant.revision}, ${foldCase(plant.name)})
      ON CONFLICT (account, id) DO NOTHING RETURNING id`;
    if (inserted.length === 1) {
      event(plant);
      return { status: 'applied', plant };
    }
  }
  const id = change.kind === 'create' ? change.plant.id : change.id;
  const [before] = await tx<StoredPlant[]>`
    SELECT id, name, tag, revision FROM plants WHERE account = ${account} AND id = ${id} FOR UPDATE`;
  if (change.kind === 'create') return { status: 'unchanged', plant: before! };
  if (before === undefined) return { status: 'missing' };
  if (!preconditionHolds(change.precondition, before)) return { status: 'precondition-failed' };
  if (change.kind === 'delete') {
    await tx`DELETE FROM plants WHERE account = ${account} AND id = ${id}`;
    event(before);
    return { status: 'applied', plant: before };
  }
  const after = updated(before, change);
  if (after === null) return { status: 'unchanged', plant: before };
  await tx`UPDATE plants SET name = ${after.name}, tag = ${after.tag}, revision = ${after.revision},
                            name_folded = ${foldCase(after.name)}
           WHERE account = ${account} AND id = ${id}`;
  event(after);
  return { status: 'applied', plant: after };
}

export function postgresPlants(sql: Sql, { feed, testCommitDelayMs }: FeedOptions): PlantStorage {
  const listing = postgresListing(sql);
  const record: RecordEvents = (tx, events) => recordEvents(tx, events, feed, testCommitDelayMs);

  return {
    async applyChanges(changes) {
      return sql.begin(async (tx) => {
        if (changes.every((c): c is Create => c.kind === 'create')) return createAll(tx, changes, record);
        const events: QueuedEvent[] = [];
        const outcomes: ChangeOutcome[] = [];
        for (const change of changes) outcomes.push(await applyOne(tx, change, events));
        await record(tx, events);
        return outcomes;
      });
    },

    async getPlant(account, id) {
      const [row] = await sql<StoredPlant[]>`
        SELECT id, name, tag, revision FROM plants WHERE account = ${account} AND id = ${id}`;
      return row ?? null;
    },

    async listPlants(account, query, limit) {
      const rows = await listing.select(account, query, limit);
      return [...rows] as PlantRecord[]; // a plain array, not the driver's result with its statement details
    },

    async countPlants(account, filter) {
      const [{ count }] = await listing.count(account, filter);
      return Number(count);
    },

    async *streamPlants(account, query) {
      // A server-side cursor: one snapshot for the whole listing, STREAM_CHUNK_ROWS in memory at a
      // time. It holds a pooled connection until the listing ends or the client goes away.
      for await (const rows of listing.select(account, query, null).cursor(STREAM_CHUNK_ROWS)) {
        yield [...rows] as PlantRecord[];
      }
    },

    plantsVersion() {
      // Other instances commit without telling this one; every read goes to the database.
      return null;
    },
  };
}
