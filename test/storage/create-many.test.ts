import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupCommit } from '../../src/storage/group-commit.js';
import { openStorage } from '../../src/storage/open.js';
import type { PlantChange, StoredPlant } from '../../src/storage/types/plants.js';
import { ENGINES, withFreshStore } from '../helpers/engines.js';

/**
 * The `create-many` change (POST /plants/batch) on storage: all or nothing inside a group-commit
 * transaction that holds other changes too; a refused one leaves its neighbours applied.
 */

const plant = (id: bigint, name: string, tag: string | null = null): StoredPlant => ({ id, name, tag, revision: 1n });
const many = (account: string, plants: StoredPlant[]): PlantChange => ({
  kind: 'create-many',
  account,
  plants,
  eventIds: plants.map((p) => `msg_many_${p.id}`),
});
const one = (account: string, p: StoredPlant): PlantChange => ({
  kind: 'create',
  account,
  plant: p,
  eventId: `msg_${p.id}`,
});

for (const engine of ENGINES) {
  describe(`create-many in one transaction with other changes (${engine.name})`, () => {
    it('applies whole, reports which items it created, and a conflicting one leaves only itself out', async () => {
      await withFreshStore(engine, async (url) => {
        const storage = await openStorage(url);
        try {
          await storage.applyChanges([one('a', plant(5n, 'five'))]);
          const outcomes = await storage.applyChanges([
            one('a', plant(1n, 'before')),
            many('a', [plant(5n, 'five'), plant(6n, 'six', 't'), plant(6n, 'six', 't')]),
            many('a', [plant(7n, 'seven'), plant(5n, 'not five')]),
            one('a', plant(8n, 'after')),
          ]);
          assert.deepEqual(
            outcomes.map((o) => o.status),
            ['applied', 'all-applied', 'conflict', 'applied'],
          );
          const applied = outcomes[1]!;
          assert.ok(applied.status === 'all-applied');
          assert.deepEqual(applied.created, [false, true, false]);
          assert.deepEqual(
            applied.plants.map((p) => p.name),
            ['five', 'six', 'six'],
          );
          assert.deepEqual(outcomes[2], { status: 'conflict', index: 1 });
          const listed = await storage.listPlants(
            'a',
            { filter: { tags: null, text: null }, order: 'id', after: null },
            10,
          );
          assert.deepEqual(
            listed.map((p) => p.id),
            [1n, 5n, 6n, 8n],
            'the refused batch stored nothing, its neighbours are there',
          );
          assert.equal(await storage.countPlants('a', { tags: null, text: 'SEVEN' }), 0, 'nor indexed it');
        } finally {
          await storage.close();
        }
      });
    });
  });

  describe(`group commit bounds a transaction by the plants it writes (${engine.name})`, () => {
    it('several batches share a commit, at most 4,096 plants of them', async () => {
      await withFreshStore(engine, async (url) => {
        const storage = await openStorage(url);
        try {
          const sizes: number[] = [];
          const write = groupCommit({
            applyChanges: (changes) => {
              sizes.push(changes.reduce((n, c) => n + (c.kind === 'create-many' ? c.plants.length : 1), 0));
              return storage.applyChanges(changes);
            },
          });
          const batch = (b: number) =>
            many(
              'bounded',
              Array.from({ length: 1000 }, (_, i) => plant(BigInt(b * 1000 + i), `p${b}-${i}`)),
            );
          const outcomes = await Promise.all(Array.from({ length: 10 }, (_, b) => write(batch(b))));
          assert.ok(outcomes.every((o) => o.status === 'all-applied'));
          assert.ok(
            sizes.every((size) => size <= 4_096),
            `${sizes}`,
          );
          assert.ok(sizes.length < 10, `batches shared commits: ${sizes}`);
          assert.equal(await storage.countPlants('bounded', { tags: null, text: null }), 10_000);
        } finally {
          await storage.close();
        }
      });
    });
  });
}
