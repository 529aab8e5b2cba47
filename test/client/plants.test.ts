import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PlantStore, PlantStoreError } from 'plant-store-client';
import { ENGINES } from '../helpers/engines.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

for (const engine of ENGINES) {
  describe(`the client against a real server (${engine.name})`, () => {
    const s = realServer(engine);
    /** A client for a new account of its own, so that each test sees only its plants. */
    const clientFor = async (account: string, scopes?: string) =>
      new PlantStore({
        baseUrl: s.url,
        token: (await createToken(s.database, account, scopes ? ['--scopes', scopes] : [])).token,
      });

    describe('every plants operation, by its operationId', () => {
      it('addPlant, getPlant (with its ETag), updatePlant, deletePlant, listPlants', async () => {
        const client = await clientFor('every-method');
        const created = await client.addPlant({ id: 1n, name: 'Monstera', tag: 'aroid' });
        assert.deepEqual(created.plant, { name: 'Monstera', tag: 'aroid' });
        assert.deepEqual((await client.addPlant({ id: 2, name: 'Fern' })).plant, { name: 'Fern' });
        const read = await client.getPlant(1n);
        assert.deepEqual(read.plant, { name: 'Monstera', tag: 'aroid' });
        assert.match(read.etag, /^"[^"]+"$/);
        assert.equal(created.etag, read.etag, "a create answers the stored plant's ETag");
        const updated = await client.updatePlant(1n, { tag: null }, { ifMatch: read.etag });
        assert.deepEqual(updated.plant, { name: 'Monstera' });
        assert.notEqual(updated.etag, read.etag);
        assert.deepEqual((await client.updatePlant(2, { name: 'Maidenhair fern', id: 2n })).plant, {
          name: 'Maidenhair fern',
        });
        await client.deletePlant(1n, { ifMatch: updated.etag });
        const page = await client.listPlants({ limit: 10 });
        assert.deepEqual(page, { plants: [{ name: 'Maidenhair fern' }], next: null, cursor: null });
        assert.deepEqual(await client.listPlants(), page);
      });

      it('addPlant again with the same plant is a safe retry', async () => {
        const client = await clientFor('replay');
        const first = await client.addPlant({ id: 7n, name: 'Aloe' });
        assert.deepEqual(await client.addPlant({ id: 7n, name: 'Aloe' }), first);
        assert.equal((await client.listPlants({ limit: 5 })).plants.length, 1);
      });
    });

    describe('ids are exact over int64, as bigint, both ways', () => {
      it('keeps 2^53 and 2^53+1 apart and reaches int64 min and max', async () => {
        const client = await clientFor('int64');
        const ids = [INT64_MIN, -1n, 0n, 2n ** 53n, 2n ** 53n + 1n, INT64_MAX];
        for (const id of ids) await client.addPlant({ id, name: `plant ${id}` });
        for (const id of ids) assert.equal((await client.getPlant(id)).plant.name, `plant ${id}`);
        const names = (await client.listPlants({ limit: 100 })).plants.map((p) => p.name);
        assert.deepEqual(
          names,
          ids.map((id) => `plant ${id}`),
        );
        await client.updatePlant(2n ** 53n + 1n, { name: 'changed', id: 2n ** 53n + 1n });
        assert.equal((await client.getPlant(2n ** 53n)).plant.name, `plant ${2n ** 53n}`);
        await client.deletePlant(INT64_MAX);
        await assert.rejects(client.getPlant(INT64_MAX), { name: 'PlantStoreError', status: 404 });
      });

      it('accepts a safe-integer number and refuses one that has lost digits, before sending', async () => {
        const client = await clientFor('numbers');
        assert.deepEqual((await client.addPlant({ id: Number.MAX_SAFE_INTEGER, name: 'max safe' })).plant, {
          name: 'max safe',
        });
        assert.equal((await client.getPlant(2n ** 53n - 1n)).plant.name, 'max safe');
        await assert.rejects(client.addPlant({ id: 2 ** 53 + 2, name: 'x' }), TypeError);
        await assert.rejects(client.getPlant(1.5), TypeError);
        assert.equal((await client.listPlants({ limit: 5 })).plants.length, 1);
      });
    });

    describe('select: listPlants, plants() and getPlant answer the fields asked for, ids as bigint', () => {
      it('types and answers ids exactly, small and beyond 2^53, with filters and pages', async () => {
        const client = await clientFor('select');
        const ids = [INT64_MIN, 5n, 2n ** 53n + 1n, INT64_MAX];
        await client.addPlants(ids.map((id, i) => ({ id, name: `Fern ${i}`, ...(i % 2 === 0 && { tag: 'fern' }) })));
        const page = await client.listPlants({ select: ['id', 'name'], limit: 2, sort: '-id', count: true });
        const first: { id: bigint; name: string } = page.plants[0]!;
        assert.deepEqual(page.plants, [
          { id: INT64_MAX, name: 'Fern 3' },
          { id: 2n ** 53n + 1n, name: 'Fern 2' },
        ]);
        assert.equal(first.id, INT64_MAX);
        assert.equal(page.total, 4);
        const tagged: bigint[] = [];
        for await (const plant of client.plants({ select: ['id'], tag: 'fern', pageSize: 1 })) {
          // @ts-expect-error name was not selected
          assert.equal(plant.name, undefined);
          tagged.push(plant.id);
        }
        assert.deepEqual(tagged, [INT64_MIN, 2n ** 53n + 1n]);
        const read = await client.getPlant(5n, { select: ['tag', 'id'] });
        assert.deepEqual(read.plant, { id: 5n });
        assert.equal(typeof read.plant.id, 'bigint');
        assert.equal(read.etag, (await client.getPlant(5n)).etag);
        const plain: { name: string; tag?: string } = (await client.getPlant(5n)).plant;
        assert.deepEqual(plain, { name: 'Fern 1' });
      });

      it('refuses an unknown field with the server’s 400 naming it', async () => {
        const client = await clientFor('select-unknown');
        // @ts-expect-error colour is not a field
        const refused = client.listPlants({ select: ['colour'] });
        await assert.rejects(refused, { name: 'PlantStoreError', status: 400, message: /select.*colour/ });
      });
    });

    describe('plants() follows Link rel="next" and visits every plant once, in id order', () => {
      it('pages through 47 plants 5 at a time', async () => {
        const client = await clientFor('paging');
        const ids = Array.from({ length: 47 }, (_, i) => BigInt(i * 7919) * 1_000_003n - 2n ** 62n);
        for (const id of [...ids].reverse()) await client.addPlant({ id, name: `p${id}` });
        const first = await client.listPlants({ limit: 5 });
        assert.equal(first.plants.length, 5);
        assert.ok(first.next!.startsWith(`${s.url}/plants?`), first.next!);
        assert.equal(first.cursor, new URL(first.next!).searchParams.get('cursor'));
        const seen: string[] = [];
        for await (const plant of client.plants({ pageSize: 5 })) seen.push(plant.name);
        assert.deepEqual(
          seen,
          ids.map((id) => `p${id}`),
        );
      });

      it('ends at once on an empty account', async () => {
        const seen = [];
        for await (const plant of (await clientFor('empty')).plants()) seen.push(plant);
        assert.deepEqual(seen, []);
      });
    });

    describe('a missing token is refused at construction, naming the option and PLANT_STORE_TOKEN', () => {
      it('throws a TypeError for an absent or empty token', () => {
        for (const token of [undefined, '']) {
          assert.throws(() => new PlantStore({ baseUrl: s.url, token: token as string }), {
            name: 'TypeError',
            message: /token option.*PLANT_STORE_TOKEN/,
          });
        }
      });
    });

    describe('every failure is one PlantStoreError with the status, the Error body and Retry-After', () => {
      const failsWith = async (promise: Promise<unknown>, status: number) => {
        const error = await promise.then(
          () => assert.fail(`expected a ${status}`),
          (e: unknown) => e,
        );
        assert.ok(error instanceof PlantStoreError, String(error));
        assert.equal(error.status, status);
        assert.equal(error.error, status);
        assert.ok(error.message.length > 0);
        assert.equal(error.retryAfter, undefined);
        assert.equal(error.attempts, 1);
        return error;
      };

      it('400, 404, 409, 412 from the plants operations', async () => {
        const client = await clientFor('errors');
        await client.addPlant({ id: 1n, name: 'Aloe' });
        assert.match((await failsWith(client.addPlant({ id: 2n, name: '' }), 400)).message, /name/);
        await failsWith(client.getPlant(404n), 404);
        await failsWith(client.deletePlant(404n), 404);
        await failsWith(client.addPlant({ id: 1n, name: 'Other' }), 409);
        await failsWith(client.updatePlant(1n, { tag: 'x' }, { ifMatch: '"stale"' }), 412);
        await failsWith(client.deletePlant(1n, { ifMatch: '"stale"' }), 412);
      });

      it('401 for an unknown token and 403 for a missing scope', async () => {
        const stranger = new PlantStore({ baseUrl: s.url, token: 'pst_unknown' });
        await failsWith(stranger.listPlants({ limit: 1 }), 401);
        await failsWith((await clientFor('reader', 'plants:read')).addPlant({ id: 1n, name: 'x' }), 403);
      });
    });
  });

  describe(`a 429 from the server's rate limit (${engine.name})`, () => {
    const s = realServer(engine, ['--rate-limit', '2']);

    it('carries Retry-After when not retried, and is waited out when retried', async () => {
      const token = (await createToken(s.database, 'limited')).token;
      const once = new PlantStore({ baseUrl: s.url, token, retries: 0 });
      const replies = await Promise.allSettled(Array.from({ length: 8 }, () => once.listPlants({ limit: 1 })));
      const limited = replies.find((r) => r.status === 'rejected');
      assert.ok(limited, 'no request was rate-limited');
      const error = (limited as PromiseRejectedResult).reason as PlantStoreError;
      assert.equal(error.status, 429);
      assert.ok(Number.isInteger(error.retryAfter) && error.retryAfter! >= 0, `Retry-After ${error.retryAfter}`);

      const patient = new PlantStore({ baseUrl: s.url, token, retries: 10 });
      const all = await Promise.all(Array.from({ length: 8 }, () => patient.listPlants({ limit: 1 })));
      assert.equal(all.length, 8);
    });
  });
}
