import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PlantStore, PlantStoreError, type Plant } from 'plant-store-client';
import { ENGINES } from '../helpers/engines.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';

const INT64_MAX = 2n ** 63n - 1n;

for (const engine of ENGINES) {
  describe(`the client finds plants and adds many at once (${engine.name})`, () => {
    const s = realServer(engine);
    const clientFor = async (account: string) =>
      new PlantStore({ baseUrl: s.url, token: (await createToken(s.database, `${account}-${engine.name}`)).token });

    describe('addPlants: all or nothing, bigint ids, the plants in order', () => {
      it('stores them and answers them in the request order; again is a replay', async () => {
        const client = await clientFor('add-many');
        const plants = [
          { id: INT64_MAX, name: 'Ω max', tag: 'b' },
          { id: 9007199254740993n, name: 'ΣΊΣΥΦΟΣ', tag: 'a' },
          { id: 1, name: 'σίς' },
        ];
        const expected = [{ name: 'Ω max', tag: 'b' }, { name: 'ΣΊΣΥΦΟΣ', tag: 'a' }, { name: 'σίς' }];
        assert.deepEqual(await client.addPlants(plants), expected);
        assert.deepEqual(await client.addPlants(plants), expected);
        assert.equal((await client.listPlants()).plants.length, 3);
      });
      it('throws the typed error naming the item', async () => {
        const client = await clientFor('add-many-bad');
        await client.addPlant({ id: 2n, name: 'taken' });
        await assert.rejects(
          client.addPlants([
            { id: 1n, name: 'a' },
            { id: 2n, name: 'b' },
          ]),
          (error) => {
            assert.ok(error instanceof PlantStoreError);
            assert.equal(error.status, 409);
            assert.match(error.message, /\[1\]\.id/);
            return true;
          },
        );
        assert.equal((await client.listPlants()).plants.length, 1);
      });
    });

    describe('listPlants and plants() take tag, q, sort and count', () => {
      it('filters, orders, counts and pages with the filters kept', async () => {
        const client = await clientFor('find');
        await client.addPlants(
          ['ΣΊΣ', 'σίς', 'ΣΊΣΥΦΟΣ', 'Fern', 'fern', 'Aloe'].map((name, i) => ({
            id: i + 1,
            name,
            tag: i % 2 ? 'x' : 'y',
          })),
        );
        const first = await client.listPlants({ q: 'ΣΊΣ', sort: '-name', limit: 2, count: true });
        assert.deepEqual(
          first.plants.map((p) => p.name),
          ['σίς', 'ΣΊΣΥΦΟΣ'],
        );
        assert.equal(first.total, 3);
        const second = await client.listPlants({ q: 'ΣΊΣ', sort: '-name', limit: 2, cursor: first.cursor });
        assert.deepEqual(
          second.plants.map((p) => p.name),
          ['ΣΊΣ'],
        );
        assert.equal(second.total, undefined, 'total only when asked');
        assert.equal('total' in (await client.listPlants({ limit: 1 })), false);

        assert.equal((await client.listPlants({ tag: ['x', 'y'], count: true, limit: 0 })).total, 6);
        const names: string[] = [];
        for await (const plant of client.plants({ tag: 'x', sort: 'name', pageSize: 1 })) names.push(plant.name);
        assert.deepEqual(names, ['Aloe', 'Fern', 'σίς']);
        const ferns: Plant[] = [];
        for await (const plant of client.plants({ q: 'FERN', pageSize: 1 })) ferns.push(plant);
        assert.deepEqual(ferns, [
          { name: 'Fern', tag: 'x' },
          { name: 'fern', tag: 'y' },
        ]);
      });
      it('a cursor with other filters is the typed 400 naming cursor', async () => {
        const client = await clientFor('find-cursor');
        await client.addPlants([1, 2, 3].map((id) => ({ id, name: `p${id}` })));
        const { cursor } = await client.listPlants({ limit: 1, sort: 'name' });
        await assert.rejects(client.listPlants({ limit: 1, cursor }), (error) => {
          assert.ok(error instanceof PlantStoreError);
          assert.equal(error.status, 400);
          assert.match(error.message, /^cursor /);
          return true;
        });
      });
    });
  });
}
