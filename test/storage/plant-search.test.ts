import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { openStorage } from '../../src/storage/open.js';
import { connect } from '../../src/storage/postgres/connection.js';
import { postgresListing } from '../../src/storage/postgres/plant-listing.js';
import type { PlantFilter, PlantListing, PlantOrder } from '../../src/storage/plant-query.js';
import type { Storage } from '../../src/storage/types.js';
import type { PlantRecord } from '../../src/storage/types/plants.js';
import { ENGINES, pg, withFreshStore } from '../helpers/engines.js';
import { insertPlants } from '../helpers/plants.js';

/**
 * Search and filters on storage, on an account larger than what a page walks before it asks the
 * trigram index (sqlite/plant-listing.ts): a rare text past that walk and a common one, beside
 * another account's plants; and the migration that folds and indexes names already stored.
 */

const PLANTS = 3_000;
const RARE_AT = 2_900;
const nameOf = (i: number) => (i === RARE_AT ? `Rare NÉEDLE ${i}` : `Plant ${i} ${i % 2 === 0 ? 'even' : 'odd'}`);

async function seed(storage: Storage, account: string) {
  for (let from = 0; from < PLANTS; from += 1_000) {
    const plants = Array.from({ length: 1_000 }, (_, k) => ({
      id: BigInt(from + k),
      name: nameOf(from + k),
      tag: null,
    }));
    await insertPlants(
      storage,
      plants.map((plant) => ({ account, plant })),
    );
  }
}

const listing = (text: string, order: PlantOrder = 'id'): PlantListing => ({
  filter: { tags: null, text },
  order,
  after: null,
});

async function everything(storage: Storage, account: string, query: PlantListing): Promise<PlantRecord[]> {
  const rows: PlantRecord[] = [];
  for await (const chunk of storage.streamPlants(account, query)) rows.push(...chunk);
  return rows;
}

for (const engine of ENGINES) {
  describe(`search on a large account (${engine.name})`, () => {
    it('finds a rare text past the walk, and pages of a common one, only in the account', async () => {
      await withFreshStore(engine, async (url) => {
        const storage = await openStorage(url);
        try {
          await seed(storage, 'big');
          await insertPlants(storage, [{ account: 'other', plant: { id: 1n, name: 'another néedle', tag: null } }]);
          assert.deepEqual(await storage.listPlants('big', listing('néedle'), 21), [
            { id: BigInt(RARE_AT), name: nameOf(RARE_AT), tag: null },
          ]);
          assert.equal((await storage.listPlants('big', listing('ÉEDLE'), 21)).length, 1);
          assert.equal((await storage.listPlants('big', listing('needle'), 21)).length, 0, 'É is not E');
          assert.equal((await storage.listPlants('big', listing('éedle 29', '-name'), 21)).length, 1);
          const evens = await storage.listPlants('big', listing('EVEN'), 21);
          assert.deepEqual(
            evens.map((p) => p.id),
            Array.from({ length: 21 }, (_, k) => BigInt(k * 2)),
          );
          const filter: PlantFilter = { tags: null, text: 'odd' };
          assert.equal(await storage.countPlants('big', filter), PLANTS / 2);
          assert.equal((await everything(storage, 'big', listing('odd', 'name'))).length, PLANTS / 2);
          assert.equal(await storage.countPlants('big', { tags: null, text: 'NÉEDLE' }), 1);
        } finally {
          await storage.close();
        }
      });
    });

    it('follows renames and deletes: a new name is found, an old or deleted one is not', async () => {
      await withFreshStore(engine, async (url) => {
        const storage = await openStorage(url);
        const change = (kind: 'update' | 'delete', id: bigint, name?: string) =>
          storage.applyChanges([
            kind === 'update'
              ? { kind, account: 'big', id, set: { name }, revision: 2n, eventId: 'msg_rename' }
              : { kind, account: 'big', id, eventId: 'msg_delete' },
          ]);
        const found = async (text: string) => (await storage.listPlants('big', listing(text), 21)).map((p) => p.id);
        try {
          await seed(storage, 'big');
          await change('update', 2_950n, 'Thistle Ѯ');
          assert.deepEqual(await found('thistle ѯ'), [2_950n]);
          await change('update', 2_950n, 'Plain again');
          assert.deepEqual(await found('thistle'), []);
          assert.deepEqual(await found('plain again'), [2_950n]);
          await change('delete', BigInt(RARE_AT));
          assert.deepEqual(await found('néedle'), []);
          await insertPlants(storage, [
            { account: 'big', plant: { id: BigInt(RARE_AT), name: 'Needle anew', tag: null } },
          ]);
          assert.deepEqual(await found('NEEDLE'), [BigInt(RARE_AT)]);
          assert.equal(await storage.countPlants('big', { tags: null, text: 'needle' }), 1);
          // The newest entry's plant goes, then another comes: the index never hands out an old key again.
          await change('delete', BigInt(RARE_AT));
          await insertPlants(storage, [{ account: 'big', plant: { id: 5_000n, name: 'Fresh needle', tag: null } }]);
          assert.deepEqual(await found('NEEDLE'), [5_000n]);
        } finally {
          await storage.close();
        }
      });
    });

    it('the migration folds and indexes the names stored before it', async () => {
      await withFreshStore(engine, async (url) => {
        let storage = await openStorage(url);
        await insertPlants(storage, [{ account: 'a', plant: { id: 1n, name: 'ΣΊΣΥΦΟΣ Old', tag: 't' } }]);
        await storage.close();
        await undoSearchMigration(engine.name, url);
        storage = await openStorage(url);
        try {
          assert.deepEqual(await storage.listPlants('a', listing('σίσυφος'), 10), [
            { id: 1n, name: 'ΣΊΣΥΦΟΣ Old', tag: 't' },
          ]);
          assert.equal(await storage.countPlants('a', { tags: ['t'], text: 'OLD' }), 1);
        } finally {
          await storage.close();
        }
      });
    });
  });
}

describe('a search on PostgreSQL is planned with its text', { skip: !ENGINES.includes(pg) }, () => {
  it('is sent as the unnamed statement, while a listing without text is prepared', async () => {
    await withFreshStore(pg, async (url) => {
      await (await openStorage(url)).close();
      // One connection: pg_prepared_statements shows the session's own statements.
      const sql = connect(url, 1);
      try {
        const statements = postgresListing(sql);
        await statements.select('a', listing('needle'), 10);
        const pages = [];
        for await (const page of statements.select('a', listing('needle'), null).cursor(10)) pages.push(page);
        assert.deepEqual(pages, []);
        await statements.count('a', { tags: ['t'], text: 'needle' });
        await statements.select('a', { filter: { tags: ['t'], text: null }, order: 'name', after: null }, 10);
        const prepared = await sql<{ statement: string }[]>`SELECT statement FROM pg_prepared_statements`;
        assert.ok(prepared.some((p) => p.statement.includes('ORDER BY name COLLATE')));
        assert.deepEqual(
          prepared.filter((p) => p.statement.includes('strpos')),
          [],
        );
      } finally {
        await sql.end();
      }
    });
  });
});

/**
 * The store as it was before the search migration: no folded names, no search indexes, and none of
 * the migrations after it (the change feed's tables, the plants' clock, the outbox's heads, the disk
 * probe, the tokens' version, the pending deliveries' index), which run again.
 */
async function undoSearchMigration(engine: string, url: string) {
  if (engine === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length));
    db.exec(`DROP TABLE plant_names; DROP TABLE plant_search_keys;
             DROP INDEX plants_by_tag; DROP INDEX plants_by_name;
             ALTER TABLE plants DROP COLUMN name_folded;
             DROP TABLE events; DROP TABLE account_events; DROP TABLE feed_key; DROP TABLE plants_clock; DROP TABLE plant_search_seq;
             DROP TABLE disk_probe; DROP TABLE token_changes;
             DROP TRIGGER api_tokens_inserted; DROP TRIGGER api_tokens_updated; DROP TRIGGER api_tokens_deleted;
             DROP INDEX webhook_outbox_heads; DROP INDEX webhook_deliveries_endpoint_due;
             DROP TABLE schema_migrations;
             PRAGMA user_version = 4;`);
    db.close();
    return;
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await sql.unsafe(`ALTER TABLE plants DROP COLUMN name_folded; DROP INDEX plants_by_tag; DROP INDEX plants_by_name;
                    DROP TABLE events; DROP TABLE account_events; DROP TABLE feed_key;
                    DROP TABLE token_changes; DROP FUNCTION count_token_change CASCADE;
                    DROP INDEX webhook_deliveries_endpoint_due; DROP TABLE webhook_outbox;
                    DELETE FROM schema_migrations WHERE version >= 4;`);
  await sql.end();
}
