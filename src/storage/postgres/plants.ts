import { STORED_PLANT_COLUMNS } from '../../plant-fields.js';
import type { PlantRecord, PlantStorage, StoredPlant } from '../types/plants.js';
import type { Sql } from './connection.js';
import { postgresListing } from './plant-listing.js';
import { STREAM_CHUNK_ROWS } from '../chunks.js';

/** The plants' reads; their writes are plant-writes.ts's. */
export function postgresPlants(sql: Sql) {
  const listing = postgresListing(sql);

  return {
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
  } satisfies Omit<PlantStorage, 'applyChanges'>;
}
