import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { newToken } from '../../src/auth/api-tokens.js';
import { openStorage } from '../../src/storage/open.js';
import type { Storage } from '../../src/storage/types.js';
import { ENGINES, withFreshStore, type Engine } from '../helpers/engines.js';
import { insertPlants } from '../helpers/plants.js';

/**
 * SQLite's plantsVersion (storage/types/plants.ts, sqlite/plants-clock.ts): it moves for every
 * plant write of another process, and not for this store's own (its page cache hears of those
 * account by account), wherever its write transactions run.
 */

/** SQLite alone has the version (PostgreSQL's is null), unless TEST_ENGINES leaves it out. */
const sqlite: Engine[] = ENGINES.filter((engine) => engine.name === 'sqlite');
const plant = (id: bigint) => ({ account: 'a', plant: { id, name: `plant ${id}`, tag: null } });

for (const [engine, sqliteWriter] of sqlite.flatMap((e) => [[e, 'thread'] as const, [e, 'inline'] as const])) {
  describe(`plantsVersion moves for other processes' plant writes only (sqlite, ${sqliteWriter} writer)`, () => {
    let drop = async () => {};
    let own: Storage;
    let other: Storage;
    before(async () => {
      const fresh = await engine.fresh();
      drop = fresh.drop;
      own = await openStorage(fresh.url, { sqliteWriter });
      other = await openStorage(fresh.url); // as another process would: its own connections and writer
    });
    after(async () => {
      await own.close();
      await other.close();
      await drop();
    });

    it('stays the same across its own writes', async () => {
      const start = own.plantsVersion();
      for (let id = 1n; id <= 5n; id++) await insertPlants(own, [plant(id)]);
      assert.equal(own.plantsVersion(), start);
    });

    it('moves when another store writes a plant, even if an own write follows before it looks', async () => {
      const start = own.plantsVersion();
      await insertPlants(other, [plant(100n)]);
      await insertPlants(own, [plant(101n)]);
      const moved = own.plantsVersion();
      assert.notEqual(moved, start);
      assert.equal(own.plantsVersion(), moved, 'and then stays');
    });

    it('stays when another store writes nothing of plants (a token) or a replay', async () => {
      const start = own.plantsVersion();
      await other.createToken(newToken('a', ['plants:read'], null).token);
      await insertPlants(other, [plant(100n)]);
      assert.equal(own.plantsVersion(), start);
    });
  });
}

for (const engine of sqlite) {
  describe('a SQLite store closed with writes in flight answers each of them first, durably', () => {
    it('resolves every write asked before close, and another opening finds them', async () => {
      await withFreshStore(engine, async (url) => {
        const storage = await openStorage(url);
        const writes = [1n, 2n, 3n].map((id) => insertPlants(storage, [plant(id)]));
        await storage.close();
        assert.deepEqual(
          (await Promise.all(writes)).map(([outcome]) => outcome!.created),
          [true, true, true],
        );
        const again = await openStorage(url);
        try {
          assert.equal(await again.countPlants('a', { tags: null, text: null }), 3);
        } finally {
          await again.close();
        }
      });
    });
  });
}
