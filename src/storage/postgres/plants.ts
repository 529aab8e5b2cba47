import { STORED_PLANT_COLUMNS } from '../../plant-fields.js';
import { applyAsync } from '../changes.js';
import { PLANT_TABLE_COLUMNS, PLANT_UPDATE_COLUMNS, plantRow } from '../plant-rows.js';
import type { ChangeOutcome, PlantChange, PlantRecord, PlantStorage, StoredPlant } from '../types/plants.js';
import type { Sql, Tx } from './connection.js';
import { recordEvents, type QueuedEvent } from './outbox.js';
import { createInOneStatement } from './create-statement.js';
import { createMany } from './plant-creates.js';
import { postgresListing } from './plant-listing.js';
import { STREAM_CHUNK_ROWS } from '../chunks.js';

type Create = Extract<PlantChange, { kind: 'create' }>;
export interface FeedOptions {
  /** False (`--event-retention 0`): no change-feed events are written. */
  feed: boolean;
}

/** One change of a mixed batch, in order, its steps (changes.ts) done in `tx`; its event is queued once the batch is done. */
async function applyOne(tx: Tx, change: PlantChange, events: QueuedEvent[]): Promise<ChangeOutcome> {
  if (change.kind === 'create-many') return createMany(tx, change, events);
  const { account } = change;
  return applyAsync(change, async (step) => {
    switch (step.kind) {
      case 'insert': {
        const inserted = await tx`
          INSERT INTO plants ${tx(plantRow(account, step.plant), PLANT_TABLE_COLUMNS)}
          ON CONFLICT (account, id) DO NOTHING RETURNING id`;
        return inserted.length === 1;
      }
      case 'read': {
        const [row] = await tx<StoredPlant[]>`
          SELECT ${tx(STORED_PLANT_COLUMNS)} FROM plants WHERE account = ${account} AND id = ${step.id} FOR UPDATE`;
        return row;
      }
      case 'delete':
        return tx`DELETE FROM plants WHERE account = ${account} AND id = ${step.plant.id}`;
      case 'update':
        return tx`UPDATE plants SET ${tx(plantRow(account, step.after), PLANT_UPDATE_COLUMNS)}
                  WHERE account = ${account} AND id = ${step.after.id}`;
      case 'event':
        return events.push({ account, type: step.type, eventId: step.eventId, plant: step.plant });
    }
  });
}

export function postgresPlants(sql: Sql, { feed }: FeedOptions): PlantStorage {
  const listing = postgresListing(sql);

  return {
    async applyChanges(changes) {
      if (changes.every((c): c is Create => c.kind === 'create')) return createInOneStatement(sql, changes, feed);
      // The events' statement is the transaction's last: it is sent and COMMIT follows at once, in
      // the same round trip, instead of after its answer. So the account's feed row (outbox.ts) is
      // locked one round trip instead of two, which is what bounds one account's commits a second
      // over a slow network. Its answer is read after the commit: PostgreSQL answers COMMIT in a
      // failed transaction with a rollback, not an error, so a failure shows there.
      let recorded: Promise<void> = Promise.resolve();
      const outcomes = await sql.begin(async (tx) => {
        const events: QueuedEvent[] = [];
        const outcomes: ChangeOutcome[] = [];
        for (const change of changes) outcomes.push(await applyOne(tx, change, events));
        recorded = recordEvents(tx, events, feed);
        recorded.catch(() => {});
        return outcomes;
      });
      await recorded;
      return outcomes;
    },

    async getPlant(account, id) {
      const [row] = await sql<StoredPlant[]>`
        SELECT ${sql(STORED_PLANT_COLUMNS)} FROM plants WHERE account = ${account} AND id = ${id}`;
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
