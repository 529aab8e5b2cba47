import type Database from 'better-sqlite3';
import { STORED_PLANT_COLUMNS } from '../../plant-fields.js';
import type { PlantListing } from '../plant-query.js';
import type { PlantStorage, StoredPlant } from '../types/plants.js';
import { sqlitePlantListing } from './plant-listing.js';
import { STREAM_CHUNK_ROWS } from '../chunks.js';

/**
 * The plants' reads, on the main connection `db`; their writes are plant-writer.ts's, on this
 * thread or the writer thread's (index.ts chooses).
 */
export function sqlitePlants(db: Database.Database) {
  const selectOne = db
    .prepare(`SELECT ${STORED_PLANT_COLUMNS.join(', ')} FROM plants WHERE account = ? AND id = ?`)
    .safeIntegers(true);
  const listing = sqlitePlantListing(db);

  return {
    async getPlant(account, id) {
      return (selectOne.get(account, id) as StoredPlant | undefined) ?? null;
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
  } satisfies Omit<PlantStorage, 'applyChanges' | 'plantsVersion'>;
}
