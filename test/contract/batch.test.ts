import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { call, listPlants, postBatch, postPlant } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

const plants = (from: number, count: number, name = (i: number) => `plant ${i}`) =>
  Array.from({ length: count }, (_, k) => ({ id: from + k, name: name(from + k) }));

for (const engine of ENGINES) {
  describe(`POST /plants/batch (${engine.name})`, () => {
    const s = realServer(engine, ['--rate-limit', '5']);
    let accounts = 0;
    const account = async () => (await createToken(s.database, `batch-${engine.name}-${accounts++}`)).token;
    const listed = async (token: string) =>
      (await listPlants(s.url, token)).json as Array<{ name: string; tag?: string }>;
    const refusal = (reply: Awaited<ReturnType<typeof call>>, status: number, message: RegExp) => {
      assert.equal(reply.status, status, reply.text);
      assert.ok(isErrorBody(reply), reply.text);
      assert.match((reply.json as { message: string }).message, message);
    };

    describe('success is 200 with one Plant per item, in the request order', () => {
      it('stores them all, ids exact over int64', async () => {
        const token = await account();
        const body =
          '[{"id":9007199254740993,"name":"b","tag":"t"},{"id":9007199254740992,"name":"a"},' +
          '{"id":-9223372036854775808,"name":"min"},{"id":9223372036854775807,"name":"max","extra":1}]';
        const reply = await postBatch(s.url, token, body);
        assert.equal(reply.status, 200);
        assert.equal(reply.text, '[{"name":"b","tag":"t"},{"name":"a"},{"name":"min"},{"name":"max"}]');
        assert.deepEqual(
          (await listed(token)).map((p) => p.name),
          ['min', 'a', 'b', 'max'],
        );
      });
      it('takes 1,000 items and a body over 16 KiB', async () => {
        const token = await account();
        const reply = await postBatch(
          s.url,
          token,
          plants(1, 1000, (i) => `a name long enough to pass 16 KiB ${i}`),
        );
        assert.equal(reply.status, 200);
        const names = plants(1, 1000, (i) => `a name long enough to pass 16 KiB ${i}`).map(({ name }) => ({ name }));
        assert.deepEqual(reply.json, names);
        assert.deepEqual(await listed(token), names);
      });
    });

    describe('items repeating a stored plant are safe retries; re-sending a batch is safe', () => {
      it('answers the same, stores nothing twice, and mixes replays with new plants', async () => {
        const token = await account();
        await postPlant(s.url, token, { id: 2, name: 'plant 2' });
        const first = await postBatch(s.url, token, plants(1, 3));
        assert.equal(first.status, 200);
        assert.equal(first.text, '[{"name":"plant 1"},{"name":"plant 2"},{"name":"plant 3"}]');
        const again = await postBatch(s.url, token, plants(1, 3));
        assert.equal(again.status, 200);
        assert.equal(again.text, first.text);
        assert.deepEqual(await listed(token), [{ name: 'plant 1' }, { name: 'plant 2' }, { name: 'plant 3' }]);
      });
      it('an id twice with the same content is one plant', async () => {
        const token = await account();
        const reply = await postBatch(s.url, token, [...plants(1, 2), ...plants(1, 1)]);
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, [{ name: 'plant 1' }, { name: 'plant 2' }, { name: 'plant 1' }]);
        assert.deepEqual(await listed(token), [{ name: 'plant 1' }, { name: 'plant 2' }]);
      });
    });

    describe('all or nothing: a 400 names the first bad item by its index, and nothing is stored', () => {
      const cases: Array<[string, unknown, RegExp]> = [
        ['a missing name', [...plants(1, 3), { id: 4 }], /^\[3\]\.name is required/],
        ['a name that is not a string', [{ id: 1, name: 5 }], /^\[0\]\.name must be a string/],
        ['an empty name', [...plants(1, 1), { id: 2, name: '' }], /^\[1\]\.name /],
        ['a tag too long', [{ id: 1, name: 'x', tag: 't'.repeat(257) }], /^\[0\]\.tag /],
        ['an id as a string', [{ id: '1', name: 'x' }], /^\[0\]\.id /],
        ['an id out of int64', '[{"id":9223372036854775808,"name":"x"}]', /^\[0\]\.id /],
        ['an item that is not an object', [...plants(1, 2), 'plant'], /^\[2\] must be a JSON object/],
        ['the same id with other content', [...plants(1, 3), { id: 2, name: 'other' }], /^\[3\]\.id .*\[1\]/],
        ['an empty array', [], /array of 1 to 1000/],
        ['1,001 items', plants(1, 1001), /array of 1 to 1000/],
        ['an object', '{"id":1,"name":"x"}', /array of 1 to 1000/],
        ['malformed JSON', '[{"id":1,', /malformed JSON/],
      ];
      for (const [what, body, message] of cases) {
        it(`refuses ${what}`, async () => {
          const token = await account();
          refusal(await postBatch(s.url, token, body as string | unknown[]), 400, message);
          assert.deepEqual(await listed(token), []);
        });
      }
    });

    describe('an item whose id is stored with another name or tag is a 409 naming its index', () => {
      it('stores none of the batch', async () => {
        const token = await account();
        await postPlant(s.url, token, { id: 3, name: 'plant 3', tag: 'old' });
        refusal(await postBatch(s.url, token, plants(1, 5)), 409, /^\[2\]\.id/);
        assert.deepEqual(await listed(token), [{ name: 'plant 3', tag: 'old' }]);
      });
      it('a batch with both a 400 and a 409 is a 400', async () => {
        const token = await account();
        await postPlant(s.url, token, { id: 1, name: 'other' });
        refusal(await postBatch(s.url, token, [...plants(1, 2), { id: 9 }]), 400, /^\[2\]\.name/);
        assert.deepEqual(await listed(token), [{ name: 'other' }]);
      });
      it("another account's plants never conflict", async () => {
        const [a, b] = [await account(), await account()];
        await postPlant(s.url, a, { id: 1, name: 'mine' });
        assert.equal((await postBatch(s.url, b, plants(1, 2))).status, 200);
        assert.deepEqual(await listed(b), [{ name: 'plant 1' }, { name: 'plant 2' }]);
        assert.deepEqual(await listed(a), [{ name: 'mine' }]);
      });
    });

    describe('the same Content-Type rules as create, at most 1 MiB, POST only, plants:write', () => {
      it('415 without a JSON Content-Type', async () => {
        const token = await account();
        refusal(await postBatch(s.url, token, plants(1, 1), 'text/plain'), 415, /Content-Type/);
        assert.deepEqual(await listed(token), []);
        const json = await postBatch(s.url, token, plants(1, 1), 'application/vnd.x+json');
        assert.equal(json.status, 200, json.text);
        assert.deepEqual(json.json, [{ name: 'plant 1' }]);
      });
      it('413 past 1 MiB', async () => {
        const body = JSON.stringify([{ id: 1, name: 'x', pad: 'p'.repeat(1024 * 1024) }]);
        refusal(await postBatch(s.url, await account(), body), 413, /1048576 bytes/);
      });
      it('405 with Allow: POST for other methods, whatever the body', async () => {
        for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
          const reply = await call(`${s.url}/plants/batch`, {
            method,
            token: await account(),
            body: method === 'GET' ? null : '{',
          });
          refusal(reply, 405, /POST/);
          assert.equal(reply.headers.get('allow'), 'POST');
        }
      });
      it('403 for a token without plants:write', async () => {
        const reader = (await createToken(s.database, `batch-reader-${engine.name}`, ['--scopes', 'plants:read']))
          .token;
        refusal(await postBatch(s.url, reader, plants(1, 1)), 403, /plants:write/);
      });
    });

    describe('the rate limit counts a batch as one request', () => {
      it('a batch of 500 leaves the rest of the second', async () => {
        const token = await account();
        const batch = await postBatch(s.url, token, plants(1, 500));
        assert.equal(batch.status, 200, batch.text);
        assert.equal(batch.headers.get('ratelimit-limit'), '5');
        assert.equal(batch.headers.get('ratelimit-remaining'), '4', 'the batch is one request of the five');
        const next = await listPlants(s.url, token, '?limit=1');
        assert.equal(next.status, 200);
        // The next request of the same second sees three left; one after the batch's second, four.
        assert.match(next.headers.get('ratelimit-remaining') ?? '', /^[34]$/);
      });
    });
  });
}
