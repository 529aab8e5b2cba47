import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES_AND_POOLER } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

let nextId = 1_000;
const freshId = () => nextId++;

for (const engine of ENGINES_AND_POOLER) {
  describe(`POST /plants (${engine.name})`, { skip: engine.skip }, () => {
    const s = realServer(engine);

    describe('success is 200 with the Plant: name and tag, never id, tag omitted when absent', () => {
      it('returns name and tag', async () => {
        const reply = await postPlant(s.url, s.token, { id: freshId(), name: 'Monstera', tag: 'aroid' });
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { name: 'Monstera', tag: 'aroid' });
      });
      it('omits tag (never null) when the plant has none', async () => {
        const reply = await postPlant(s.url, s.token, { id: freshId(), name: 'Fern' });
        assert.equal(reply.status, 200);
        assert.equal(reply.text, '{"name":"Fern"}');
      });
      it('accepts and ignores extra properties', async () => {
        const reply = await postPlant(s.url, s.token, {
          id: freshId(),
          name: 'Cactus',
          color: 'green',
          nested: { a: [1] },
        });
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { name: 'Cactus' });
      });
      it('stores names and tags exactly as sent: spaces, unicode, empty tag', async () => {
        for (const [name, tag] of [
          ['  Aloe  ', ''],
          ['Cafe\u0301', 'e\u0301'],
          ['🌵 cactus', '多肉'],
          ['x'.repeat(256), 't'.repeat(256)],
        ]) {
          const id = freshId();
          const reply = await postPlant(s.url, s.token, { id, name, tag });
          assert.equal(reply.status, 200, reply.text);
          assert.deepEqual(reply.json, { name, tag });
        }
      });
      it('counts characters, not bytes or UTF-16 units: 256 emoji are a valid name', async () => {
        const name = '🌱'.repeat(256);
        assert.equal([...name].length, 256);
        const id = freshId();
        const reply = await postPlant(s.url, s.token, { id, name, tag: name });
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(reply.json, { name, tag: name });
        assert.deepEqual((await call(`${s.url}/plants/${id}`, { token: s.token })).json, { name, tag: name });
        // The 257th character is one too many, as for any other name.
        const longer = await postPlant(s.url, s.token, { id: freshId(), name: `${name}🌱` });
        assert.equal(longer.status, 400, longer.text);
        assert.match((longer.json as { message: string }).message, /\bname\b/);
      });
    });

    describe('Content-Type must be JSON, else 415', () => {
      const body = JSON.stringify({ id: 1, name: 'x' });
      for (const type of [
        'application/json',
        'application/json; charset=utf-8',
        'Application/JSON',
        'application/merge-patch+json',
        'application/vnd.plants+json; charset=UTF-8',
      ]) {
        it(`accepts ${type}`, async () => {
          const reply = await call(`${s.url}/plants`, {
            method: 'POST',
            token: s.token,
            headers: { 'content-type': type },
            body: JSON.stringify({ id: freshId(), name: 'x' }),
          });
          assert.equal(reply.status, 200, reply.text);
          assert.deepEqual(reply.json, { name: 'x' });
        });
      }
      for (const type of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/xml',
        'multipart/form-data; boundary=x',
        'application/jsonx',
        'json',
      ]) {
        it(`refuses ${type} with 415`, async () => {
          const reply = await call(`${s.url}/plants`, {
            method: 'POST',
            token: s.token,
            headers: { 'content-type': type },
            body,
          });
          assert.equal(reply.status, 415);
          assert.ok(isErrorBody(reply), reply.text);
        });
      }
      it('refuses a missing Content-Type with 415', async () => {
        const reply = await call(`${s.url}/plants`, { method: 'POST', token: s.token, body: new Blob([body]) });
        assert.equal(reply.status, 415);
        assert.ok(isErrorBody(reply));
      });
      it('refuses a missing Content-Type with no body with 415', async () => {
        const reply = await call(`${s.url}/plants`, { method: 'POST', token: s.token });
        assert.equal(reply.status, 415);
        assert.ok(isErrorBody(reply));
      });
    });

    describe('a body over 16 KiB is refused with 413', () => {
      it('refuses 16 KiB + 1', async () => {
        const filler = 'a'.repeat(16 * 1024);
        const reply = await postPlant(s.url, s.token, JSON.stringify({ id: freshId(), name: 'x', filler }));
        assert.equal(reply.status, 413);
        assert.ok(isErrorBody(reply));
      });
      it('accepts exactly 16384 bytes', async () => {
        const base = JSON.stringify({ id: 424242, name: 'x', filler: '' });
        const body = JSON.stringify({ id: 424242, name: 'x', filler: 'a'.repeat(16 * 1024 - base.length) });
        assert.equal(Buffer.byteLength(body), 16 * 1024);
        const reply = await postPlant(s.url, s.token, body);
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(reply.json, { name: 'x' });
      });
    });

    describe('bad input is 400 with a message naming the field', () => {
      const cases: Array<[string, string, string | null]> = [
        ['malformed JSON', '{"id": 1, "name": ', null],
        ['trailing garbage', '{"id": 1, "name": "a"} x', null],
        ['an array body', '[{"id": 1, "name": "a"}]', null],
        ['a string body', '"plant"', null],
        ['a null body', 'null', null],
        ['a number body', '42', null],
        ['an empty body', '', null],
        ['missing id', '{"name": "a"}', 'id'],
        ['missing name', '{"id": 1}', 'name'],
        ['id as a string', '{"id": "5", "name": "a"}', 'id'],
        ['id as a fraction', '{"id": 1.5, "name": "a"}', 'id'],
        ['id as null', '{"id": null, "name": "a"}', 'id'],
        ['id as boolean', '{"id": true, "name": "a"}', 'id'],
        ['id above int64', '{"id": 9223372036854775808, "name": "a"}', 'id'],
        ['id below int64', '{"id": -9223372036854775809, "name": "a"}', 'id'],
        ['id huge', `{"id": 1${'0'.repeat(400)}, "name": "a"}`, 'id'],
        ['id with exponent overflow', '{"id": 1e400, "name": "a"}', 'id'],
        ['id whose exponent underflows (not 0)', '{"id": 1e-400, "name": "a"}', 'id'],
        ['id a hair below zero', '{"id": -1e-400, "name": "a"}', 'id'],
        ['id a fraction a double rounds to 1', '{"id": 1.0000000000000000001, "name": "a"}', 'id'],
        ['id as a fraction in exponent form', '{"id": 15e-1, "name": "a"}', 'id'],
        ['id above int64 in exponent form', '{"id": 9.223372036854775808e18, "name": "a"}', 'id'],
        ['id with a huge exponent', '{"id": 1e99999999999, "name": "a"}', 'id'],
        ['name as a number', '{"id": 1, "name": 5}', 'name'],
        ['name as null', '{"id": 1, "name": null}', 'name'],
        ['name as an object', '{"id": 1, "name": {}}', 'name'],
        ['name empty', '{"id": 1, "name": ""}', 'name'],
        ['name of 257 characters', JSON.stringify({ id: 1, name: 'n'.repeat(257) }), 'name'],
        ['name with U+0000', '{"id": 1, "name": "a\\u0000b"}', 'name'],
        ['tag as a number', '{"id": 1, "name": "a", "tag": 5}', 'tag'],
        ['tag as null', '{"id": 1, "name": "a", "tag": null}', 'tag'],
        ['tag of 257 characters', JSON.stringify({ id: 1, name: 'a', tag: 't'.repeat(257) }), 'tag'],
        ['tag with U+0000', '{"id": 1, "name": "a", "tag": "\\u0000"}', 'tag'],
      ];
      for (const [what, body, field] of cases) {
        it(`refuses ${what}`, async () => {
          const reply = await postPlant(s.url, s.token, body);
          assert.equal(reply.status, 400, reply.text);
          assert.ok(isErrorBody(reply), reply.text);
          if (field) assert.match((reply.json as { message: string }).message, new RegExp(`\\b${field}\\b`));
        });
      }
      it('stores nothing for a refused body', async () => {
        const token = (await createToken(s.database, `refused-${engine.name}`)).token;
        await postPlant(s.url, token, '{"id": 77, "name": ""}');
        await postPlant(s.url, token, '{"id": 77, "name": "a", "tag": 7}');
        assert.equal((await listPlants(s.url, token)).text, '[]');
      });
    });

    describe('id is exact over the whole int64 range', () => {
      it('keeps 9007199254740992 and 9007199254740993 as two plants', async () => {
        const token = (await createToken(s.database, `int64-${engine.name}`)).token;
        assert.equal((await postPlant(s.url, token, '{"id": 9007199254740993, "name": "odd"}')).status, 200);
        assert.equal((await postPlant(s.url, token, '{"id": 9007199254740992, "name": "even"}')).status, 200);
        assert.deepEqual((await listPlants(s.url, token)).json, [{ name: 'even' }, { name: 'odd' }]);
        // A retry of each is recognised as the same plant, not a conflict with the other.
        const retry = await postPlant(s.url, token, '{"id": 9007199254740993, "name": "odd"}');
        assert.equal(retry.status, 200);
        assert.deepEqual(retry.json, { name: 'odd' });
        const conflict = await postPlant(s.url, token, '{"id": 9007199254740992, "name": "odd"}');
        assert.equal(conflict.status, 409);
        assert.ok(isErrorBody(conflict), conflict.text);
        assert.deepEqual((await listPlants(s.url, token)).json, [{ name: 'even' }, { name: 'odd' }]);
      });
      it('accepts the minimum and maximum int64 and orders them numerically', async () => {
        const token = (await createToken(s.database, `bounds-${engine.name}`)).token;
        for (const [id, name] of [
          ['9223372036854775807', 'max'],
          ['-9223372036854775808', 'min'],
          ['0', 'zero'],
          ['-1', 'minus one'],
        ]) {
          assert.equal((await postPlant(s.url, token, `{"id": ${id}, "name": "${name}"}`)).status, 200);
        }
        const names = ((await listPlants(s.url, token)).json as Array<{ name: string }>).map((p) => p.name);
        assert.deepEqual(names, ['min', 'minus one', 'zero', 'max']);
      });
    });

    describe('id is any JSON number whose value is an integer, whatever its form', () => {
      it('stores 1e2 as plant 100, 1.5e1 as 15, -0 as 0, and exponent forms exactly beyond 2^53', async () => {
        const token = (await createToken(s.database, `forms-${engine.name}`)).token;
        for (const [literal, id] of [
          ['1e2', '100'],
          ['1E+2', '100'],
          ['100.000', '100'],
          ['1.5e1', '15'],
          ['-0', '0'],
          ['0e7', '0'],
          ['9.007199254740993e15', '9007199254740993'],
          ['9223372036854775807e0', '9223372036854775807'],
          ['-9.223372036854775808E18', '-9223372036854775808'],
          ['92233720368547758070e-1', '9223372036854775807'],
        ]) {
          const name = `plant ${id}`;
          const reply = await postPlant(s.url, token, `{"id": ${literal}, "name": "${name}"}`);
          assert.equal(reply.status, 200, `${literal}: ${reply.text}`);
          const byId = await call(`${s.url}/plants/${id}`, { token });
          assert.equal(byId.status, 200, `${literal} is plant ${id}`);
          assert.equal((byId.json as { name: string }).name, name);
        }
        const names = ((await listPlants(s.url, token)).json as { name: string }[]).map((p) => p.name);
        assert.deepEqual(names, [
          'plant -9223372036854775808',
          'plant 0',
          'plant 15',
          'plant 100',
          'plant 9007199254740993',
          'plant 9223372036854775807',
        ]);
      });
    });

    describe('the same id is a safe retry with the same plant, a 409 with a different one', () => {
      it('answers a retry with 200 and the stored plant, storing nothing twice', async () => {
        const token = (await createToken(s.database, `retry-${engine.name}`)).token;
        const body = { id: 5, name: 'Basil', tag: 'herb' };
        assert.equal((await postPlant(s.url, token, body)).status, 200);
        const again = await postPlant(s.url, token, body);
        assert.equal(again.status, 200);
        assert.deepEqual(again.json, { name: 'Basil', tag: 'herb' });
        assert.equal(((await listPlants(s.url, token)).json as unknown[]).length, 1);
      });
      it('answers 409 for a different name, a different tag, an added or a removed tag', async () => {
        const token = (await createToken(s.database, `conflict-${engine.name}`)).token;
        await postPlant(s.url, token, { id: 6, name: 'Mint', tag: 'herb' });
        for (const body of [
          { id: 6, name: 'Mint2', tag: 'herb' },
          { id: 6, name: 'Mint', tag: 'Herb' },
          { id: 6, name: 'Mint' },
        ]) {
          const reply = await postPlant(s.url, token, body);
          assert.equal(reply.status, 409);
          assert.ok(isErrorBody(reply));
        }
        await postPlant(s.url, token, { id: 7, name: 'Sage' });
        const emptyTag = await postPlant(s.url, token, { id: 7, name: 'Sage', tag: '' });
        assert.equal(emptyTag.status, 409);
        assert.ok(isErrorBody(emptyTag), emptyTag.text);
        assert.deepEqual((await listPlants(s.url, token)).json, [{ name: 'Mint', tag: 'herb' }, { name: 'Sage' }]);
      });
      it('lets two accounts use the same id independently', async () => {
        const a = (await createToken(s.database, `same-id-a-${engine.name}`)).token;
        const b = (await createToken(s.database, `same-id-b-${engine.name}`)).token;
        assert.equal((await postPlant(s.url, a, { id: 1, name: 'Ivy' })).status, 200);
        const other = await postPlant(s.url, b, { id: 1, name: 'Oak' });
        assert.equal(other.status, 200, 'a 409 here would reveal the other account');
        assert.deepEqual((await listPlants(s.url, a)).json, [{ name: 'Ivy' }]);
        assert.deepEqual((await listPlants(s.url, b)).json, [{ name: 'Oak' }]);
      });
    });

    describe("a 200 carries the stored plant's ETag, the one GET /plants/{id} gives, for a new plant and a retry", () => {
      it('answers the same ETag on create, on retry and on GET, usable at once in If-Match', async () => {
        const token = (await createToken(s.database, `etag-${engine.name}`)).token;
        const body = '{"id": 9007199254740993, "name": "Calathea"}';
        const created = await postPlant(s.url, token, body);
        const etag = created.headers.get('etag');
        assert.match(etag ?? '', /^"[^"]+"$/);
        assert.equal((await postPlant(s.url, token, body)).headers.get('etag'), etag);
        const read = await call(`${s.url}/plants/9007199254740993`, { token });
        assert.equal(read.headers.get('etag'), etag);
        const patched = await call(`${s.url}/plants/9007199254740993`, {
          method: 'PATCH',
          token,
          headers: { 'content-type': 'application/merge-patch+json', 'if-match': etag! },
          body: '{"tag": "prayer plant"}',
        });
        assert.equal(patched.status, 200);
        const replayed = await postPlant(
          s.url,
          token,
          '{"id": 9007199254740993, "name": "Calathea", "tag": "prayer plant"}',
        );
        assert.equal(replayed.headers.get('etag'), patched.headers.get('etag'));
      });
    });
  });
}
