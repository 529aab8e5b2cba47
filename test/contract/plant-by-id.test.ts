import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ENGINES_AND_POOLER } from '../helpers/engines.js';
import { call, listPlants, postPlant, type Reply } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** The contract's "Plants by id: GET, PATCH and DELETE /plants/{id}", one describe per sentence. */

const INT64_MIN = '-9223372036854775808';
const INT64_MAX = '9223372036854775807';
const TWO_POW_53 = '9007199254740992';
const TWO_POW_53_PLUS_1 = '9007199254740993';
const MERGE_PATCH = 'application/merge-patch+json';

let nextId = 10_000;
const freshId = () => String(nextId++);

/** A NewPlant body as text, so ids beyond 2^53 stay exact. */
function newPlant(id: string, name: string, tag?: string): string {
  return `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`;
}

function assertError(reply: Reply, status: number, message?: RegExp) {
  assert.equal(reply.status, status, reply.text);
  assert.ok(isErrorBody(reply), `the Error body: ${reply.text}`);
  if (message) assert.match((reply.json as { message: string }).message, message);
}

function etagOf(reply: Reply): string {
  const etag = reply.headers.get('etag');
  assert.ok(etag !== null, 'the answer has an ETag');
  return etag;
}

for (const engine of ENGINES_AND_POOLER) {
  describe(`GET, PATCH and DELETE /plants/{id} (${engine.name})`, { skip: engine.skip }, () => {
    const s = realServer(engine);
    const tokens = { reader: '', writer: '', other: '' };
    before(async () => {
      tokens.reader = (await createToken(s.database, 'by-id-reader', ['--scopes', 'plants:read'])).token;
      tokens.writer = (await createToken(s.database, 'by-id-writer', ['--scopes', 'plants:write'])).token;
      tokens.other = (await createToken(s.database, 'by-id-other')).token;
    });

    const url = (id: string) => `${s.url}/plants/${id}`;
    const get = (id: string, headers: Record<string, string> = {}, token = s.token) =>
      call(url(id), { token, headers });
    const head = (id: string, headers: Record<string, string> = {}, token = s.token) =>
      call(url(id), { method: 'HEAD', token, headers });
    const patch = (id: string, body: string | object, headers: Record<string, string> = {}, token = s.token) =>
      call(url(id), {
        method: 'PATCH',
        token,
        headers: { 'content-type': MERGE_PATCH, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    const remove = (id: string, headers: Record<string, string> = {}, token = s.token) =>
      call(url(id), { method: 'DELETE', token, headers });

    /** Creates a plant and returns its id and current ETag. */
    async function plant(name: string, tag?: string, id = freshId()): Promise<{ id: string; etag: string }> {
      const created = await postPlant(s.url, s.token, newPlant(id, name, tag));
      assert.equal(created.status, 200, created.text);
      const read = await get(id);
      assert.equal(read.status, 200, read.text);
      return { id, etag: etagOf(read) };
    }

    /** The plant as GET sees it: status, body and ETag. */
    async function current(id: string) {
      const reply = await get(id);
      return { status: reply.status, body: reply.json, etag: reply.headers.get('etag') };
    }

    describe('{id} is a canonical decimal int64, exact over all of it; anything else is 400 naming id', () => {
      const malformed = [
        '007',
        '+5',
        '1.0',
        '1e3',
        'abc',
        '-0',
        '00',
        '-01',
        '0x10',
        '1_000',
        '%205',
        '5%20',
        '9223372036854775808',
        '-9223372036854775809',
        '99999999999999999999999',
        '1'.repeat(101),
        '9'.repeat(5_000),
        'a'.repeat(300),
      ];
      for (const id of malformed) {
        it(`GET, HEAD, PATCH and DELETE /plants/${id} -> 400 naming id`, async () => {
          assertError(await get(id), 400, /\bid\b/);
          assert.equal((await head(id)).status, 400);
          assertError(await patch(id, { name: 'x' }), 400, /\bid\b/);
          assertError(await remove(id), 400, /\bid\b/);
        });
      }

      it('names the range for digits out of it, however many', async () => {
        for (const id of ['9223372036854775808', '-9223372036854775809', '1'.repeat(101)]) {
          assertError(await get(id), 400, /id must be within the signed 64-bit integer range/);
        }
      });

      for (const id of ['0', '-1', INT64_MIN, INT64_MAX, TWO_POW_53_PLUS_1]) {
        it(`reads, updates and deletes the plant with id ${id}`, async () => {
          await plant(`edge ${id}`, undefined, id);
          assert.deepEqual((await get(id)).json, { name: `edge ${id}` });
          assert.deepEqual((await patch(id, { tag: 'edge' })).json, { name: `edge ${id}`, tag: 'edge' });
          assert.equal((await remove(id)).status, 204);
          assert.equal((await get(id)).status, 404);
        });
      }

      it('keeps 2^53 and 2^53 + 1 apart (no rounding through a double)', async () => {
        await plant('two to the 53', undefined, TWO_POW_53);
        await plant('two to the 53 plus one', undefined, '9007199254740995');
        assert.equal((await patch('9007199254740995', { name: 'odd one' })).status, 200);
        assert.deepEqual((await get(TWO_POW_53)).json, { name: 'two to the 53' });
        assert.deepEqual((await get('9007199254740995')).json, { name: 'odd one' });
        assert.equal((await remove(TWO_POW_53)).status, 204);
        assert.deepEqual((await get('9007199254740995')).json, { name: 'odd one' });
      });
    });

    describe("an id the caller's account lacks is 404, whether or not another account has it", () => {
      it("answers GET, HEAD, PATCH and DELETE of another account's plant exactly as for nobody's", async () => {
        const { id, etag } = await plant('private', 'mine');
        const theirs = {
          get: await get(id, {}, tokens.other),
          head: await head(id, {}, tokens.other),
          patch: await patch(id, { name: 'stolen' }, {}, tokens.other),
          patchIfMatch: await patch(id, { name: 'stolen' }, { 'if-match': '"not-the-tag"' }, tokens.other),
          remove: await remove(id, {}, tokens.other),
          removeIfMatch: await remove(id, { 'if-match': etag }, tokens.other),
        };
        assert.deepEqual(await current(id), { status: 200, body: { name: 'private', tag: 'mine' }, etag });
        assert.equal((await remove(id)).status, 204);
        const nobodys = {
          get: await get(id, {}, tokens.other),
          head: await head(id, {}, tokens.other),
          patch: await patch(id, { name: 'stolen' }, {}, tokens.other),
          patchIfMatch: await patch(id, { name: 'stolen' }, { 'if-match': '"not-the-tag"' }, tokens.other),
          remove: await remove(id, {}, tokens.other),
          removeIfMatch: await remove(id, { 'if-match': etag }, tokens.other),
        };
        for (const key of Object.keys(theirs) as (keyof typeof theirs)[]) {
          assert.equal(theirs[key].status, 404, `${key}: ${theirs[key].text}`);
          assert.equal(theirs[key].text, nobodys[key].text, `${key}: the same body`);
          assert.deepEqual(
            [...theirs[key].headers.keys()].filter((name) => name !== 'date' && name !== 'x-request-id'),
            [...nobodys[key].headers.keys()].filter((name) => name !== 'date' && name !== 'x-request-id'),
            `${key}: the same headers`,
          );
        }
        assertError(theirs.get, 404, new RegExp(id));
      });

      it("never shows another account's plant with the same id", async () => {
        const id = freshId();
        assert.equal((await postPlant(s.url, s.token, newPlant(id, 'default account'))).status, 200);
        assert.equal((await postPlant(s.url, tokens.other, newPlant(id, 'other account'))).status, 200);
        assert.equal((await patch(id, { tag: 'other' }, {}, tokens.other)).status, 200);
        assert.deepEqual((await get(id)).json, { name: 'default account' });
        assert.equal((await remove(id, {}, tokens.other)).status, 204);
        assert.deepEqual((await get(id)).json, { name: 'default account' });
      });
    });

    describe('GET is 200 with the Plant and a strong ETag; If-None-Match with the current tag is 304 with no body; HEAD works as for every GET', () => {
      it('answers the Plant (tag omitted when absent, never id) with a strong ETag', async () => {
        const { id } = await plant('Fern');
        const reply = await get(id);
        assert.equal(reply.status, 200);
        assert.equal(reply.text, '{"name":"Fern"}');
        assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
        assert.match(etagOf(reply), /^"[^"]+"$/, 'a strong tag: quoted, no W/');
        assert.equal(etagOf(await get(id)), etagOf(reply), 'the tag is stable while the plant is');
      });

      it('answers 304 with no body and the ETag to If-None-Match with the current tag, * or a weak form of it', async () => {
        const { id, etag } = await plant('Moss', 'green');
        for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
          const reply = await get(id, { 'if-none-match': header });
          assert.equal(reply.status, 304, header);
          assert.equal(reply.text, '', 'no body');
          assert.equal(reply.headers.get('etag'), etag);
        }
      });

      it('answers 200 to If-None-Match with another tag', async () => {
        const { id } = await plant('Ivy');
        const reply = await get(id, { 'if-none-match': '"some-other-tag"' });
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { name: 'Ivy' });
      });

      it('answers HEAD as GET, without the body', async () => {
        const { id, etag } = await plant('Sage', 'herb');
        const reply = await head(id);
        assert.equal(reply.status, 200);
        assert.equal(reply.text, '');
        assert.equal(reply.headers.get('etag'), etag);
        assert.equal(reply.headers.get('content-length'), String(Buffer.byteLength('{"name":"Sage","tag":"herb"}')));
        assert.equal((await head(id, { 'if-none-match': etag })).status, 304);
        assert.equal((await head(freshId())).status, 404);
      });

      it('answers 404 with the Error body for an id nobody has', async () => {
        assertError(await get(freshId()), 404);
      });
    });

    describe('GET /plants/{id} sends Cache-Control: private, no-cache, so that its ETag can be revalidated', () => {
      it('on 200 and 304, and on neither PATCH nor DELETE', async () => {
        const { id, etag } = await plant('Basil');
        assert.equal((await get(id)).headers.get('cache-control'), 'private, no-cache');
        assert.equal((await get(id, { 'if-none-match': etag })).headers.get('cache-control'), 'private, no-cache');
        const patched = await patch(id, { tag: 'herb' });
        assert.equal(patched.status, 200);
        assert.notEqual(patched.headers.get('cache-control'), 'private, no-cache', 'only GET may be revalidated');
        const removed = await remove(id);
        assert.notEqual(removed.headers.get('cache-control'), 'private, no-cache');
      });
    });

    describe('PATCH is a JSON merge patch of name and/or tag: "tag": null removes the tag, name cannot be removed', () => {
      it('changes the name alone, keeping the tag', async () => {
        const { id } = await plant('Rose', 'red');
        const reply = await patch(id, { name: 'Tea rose' });
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { name: 'Tea rose', tag: 'red' });
        assert.deepEqual((await get(id)).json, { name: 'Tea rose', tag: 'red' });
      });

      it('changes the tag alone, or both, and adds a tag to a plant without one', async () => {
        const { id } = await plant('Tulip');
        assert.deepEqual((await patch(id, { tag: 'yellow' })).json, { name: 'Tulip', tag: 'yellow' });
        assert.deepEqual((await patch(id, { name: 'Parrot tulip', tag: '' })).json, { name: 'Parrot tulip', tag: '' });
        assert.deepEqual((await get(id)).json, { name: 'Parrot tulip', tag: '' }, 'an empty tag is a tag');
      });

      it('removes the tag with "tag": null (the answer omits it, never null)', async () => {
        const { id } = await plant('Lily', 'white');
        const reply = await patch(id, { tag: null });
        assert.equal(reply.status, 200);
        assert.equal(reply.text, '{"name":"Lily"}');
        assert.equal((await get(id)).text, '{"name":"Lily"}');
        assert.equal((await patch(id, { tag: null })).text, '{"name":"Lily"}', 'removing no tag is fine');
      });

      it('refuses "name": null with 400 naming name, changing nothing', async () => {
        const { id, etag } = await plant('Daisy', 'white');
        assertError(await patch(id, { name: null }), 400, /\bname\b/);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Daisy', tag: 'white' }, etag });
      });

      it('ignores other properties', async () => {
        const { id } = await plant('Orchid');
        const reply = await patch(id, { color: 'purple', nested: { tag: 'no' }, name: 'Moth orchid' });
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { name: 'Moth orchid' });
        const untouched = await patch(id, { color: 'blue' });
        assert.equal(untouched.status, 200);
        assert.deepEqual(untouched.json, { name: 'Moth orchid' });
      });

      it('stores names and tags exactly as sent, as create does', async () => {
        const { id } = await plant('Plain');
        for (const [name, tag] of [
          ['  padded  ', 'e\u0301'],
          ['🌵'.repeat(256), 't'.repeat(256)],
        ]) {
          assert.deepEqual((await patch(id, { name, tag })).json, { name, tag });
          assert.deepEqual((await get(id)).json, { name, tag });
        }
      });
    });

    describe('an empty PATCH changes nothing and answers 200', () => {
      it('keeps the plant and its ETag', async () => {
        const { id, etag } = await plant('Cactus', 'spiny');
        const reply = await patch(id, {});
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, { name: 'Cactus', tag: 'spiny' });
        assert.equal(reply.headers.get('etag'), etag);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Cactus', tag: 'spiny' }, etag });
      });

      it('keeps the ETag when the patch sets the values the plant already has', async () => {
        const { id, etag } = await plant('Aloe', 'succulent');
        const reply = await patch(id, { name: 'Aloe', tag: 'succulent' });
        assert.equal(reply.status, 200);
        assert.equal(reply.headers.get('etag'), etag);
      });
    });

    describe("an id in the PATCH body must equal the path's, else 400", () => {
      it('accepts the same id, exact beyond 2^53', async () => {
        await plant('big', undefined, TWO_POW_53_PLUS_1.replace(/3$/, '7'));
        const reply = await patch('9007199254740997', `{"id":9007199254740997,"name":"big too"}`);
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(reply.json, { name: 'big too' });
      });

      it('refuses another id, even one a double would round to the same value', async () => {
        const { id, etag } = await plant('mismatch', undefined, '9007199254740999');
        assertError(await patch(id, '{"id":9007199254741000,"name":"x"}'), 400, /\bid\b/);
        assertError(await patch(id, '{"id":1,"name":"x"}'), 400, /\bid\b/);
        assertError(await patch(id, '{"id":"9007199254740999"}'), 400, /\bid\b/);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'mismatch' }, etag });
      });
    });

    describe('PATCH has the same validation and size limit as create', () => {
      const bad: [string, string, RegExp][] = [
        ['an empty name', '{"name":""}', /\bname\b/],
        ['a name of 257 characters', JSON.stringify({ name: 'n'.repeat(257) }), /\bname\b/],
        ['a tag of 257 characters', JSON.stringify({ tag: 't'.repeat(257) }), /\btag\b/],
        ['a number as name', '{"name":5}', /\bname\b/],
        ['a number as tag', '{"tag":5}', /\btag\b/],
        ['a name with U+0000', '{"name":"a\\u0000b"}', /\bname\b/],
        ['a tag with U+0000', '{"tag":"a\\u0000b"}', /\btag\b/],
        ['a lone surrogate', '{"name":"\\ud800"}', /\bname\b/],
        ['an array', '[]', /object/],
        ['null', 'null', /object/],
        ['a string', '"name"', /object/],
        ['malformed JSON', '{"name":', /JSON/],
        ['an empty body', '', /empty/],
      ];
      for (const [what, body, message] of bad) {
        it(`refuses ${what} with 400, changing nothing`, async () => {
          const { id, etag } = await plant('Valid', 'kept');
          assertError(await patch(id, body), 400, message);
          assert.deepEqual(await current(id), { status: 200, body: { name: 'Valid', tag: 'kept' }, etag });
        });
      }

      it('refuses a body over 16 KiB with 413, and accepts one just under', async () => {
        const { id, etag } = await plant('Big body');
        const padding = (bytes: number) => JSON.stringify({ name: 'Big body', pad: 'p'.repeat(bytes) });
        const over = padding(16 * 1024);
        assertError(await patch(id, over), 413);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Big body' }, etag });
        const under = padding(16 * 1024 - 40);
        assert.ok(Buffer.byteLength(under) <= 16 * 1024);
        assert.equal((await patch(id, under)).status, 200);
      });

      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
        it(`refuses Content-Type ${type} with 415`, async () => {
          const { id, etag } = await plant('Typed');
          assertError(await patch(id, { name: 'changed' }, { 'content-type': type }), 415);
          assert.deepEqual(await current(id), { status: 200, body: { name: 'Typed' }, etag });
        });
      }

      it('refuses a missing Content-Type with 415', async () => {
        const { id } = await plant('Untyped');
        const reply = await call(url(id), { method: 'PATCH', token: s.token, body: new Blob(['{"name":"x"}']) });
        assertError(reply, 415);
      });

      it('refuses a gzip Content-Encoding with 415 (bodies are not decompressed)', async () => {
        const { id } = await plant('Zipped');
        assertError(await patch(id, { name: 'x' }, { 'content-encoding': 'gzip' }), 415, /Content-Encoding/);
      });

      for (const type of [MERGE_PATCH, 'application/json', 'application/json; charset=utf-8']) {
        it(`accepts Content-Type ${type}`, async () => {
          const { id } = await plant('Either');
          const reply = await patch(id, { tag: 'accepted' }, { 'content-type': type });
          assert.equal(reply.status, 200, reply.text);
          assert.deepEqual(reply.json, { name: 'Either', tag: 'accepted' });
        });
      }
    });

    describe('the ETag changes whenever the plant changes, and PATCH answers the new one', () => {
      it('moves at every change, never back to an earlier tag', async () => {
        const { id, etag } = await plant('Mint');
        const seen = new Set([etag]);
        for (const change of [{ tag: 'a' }, { tag: 'b' }, { tag: null }, { name: 'Spearmint' }, { name: 'Mint' }]) {
          const reply = await patch(id, change);
          assert.equal(reply.status, 200);
          const next = etagOf(reply);
          assert.ok(!seen.has(next), `a new tag after ${JSON.stringify(change)}`);
          seen.add(next);
          assert.equal(etagOf(await get(id)), next, 'GET shows the tag PATCH answered');
        }
        assert.equal((await get(id, { 'if-none-match': etag })).status, 200, 'the first tag is stale');
      });
    });

    describe('DELETE is 204 with no body; deleting it again is 404', () => {
      it('deletes, then answers 404 to GET, PATCH and DELETE', async () => {
        const { id } = await plant('Gone', 'soon');
        const reply = await remove(id);
        assert.equal(reply.status, 204);
        assert.equal(reply.text, '');
        assertError(await get(id), 404);
        assertError(await patch(id, { name: 'back' }), 404);
        assertError(await remove(id), 404);
      });

      it('ignores a body sent with DELETE', async () => {
        const { id } = await plant('With body');
        const reply = await call(url(id), {
          method: 'DELETE',
          token: s.token,
          headers: { 'content-type': 'text/plain' },
          body: 'not json at all',
        });
        assert.equal(reply.status, 204);
      });

      it('takes the plant out of listings at once', async () => {
        const account = (await createToken(s.database, `listing-${engine.name}`)).token;
        for (const id of ['1', '2', '3']) {
          assert.equal((await postPlant(s.url, account, newPlant(id, `p${id}`))).status, 200);
        }
        assert.deepEqual((await listPlants(s.url, account, '?limit=10')).json, [
          { name: 'p1' },
          { name: 'p2' },
          { name: 'p3' },
        ]);
        assert.equal((await remove('2', {}, account)).status, 204);
        assert.deepEqual((await listPlants(s.url, account, '?limit=10')).json, [{ name: 'p1' }, { name: 'p3' }]);
        assert.deepEqual((await listPlants(s.url, account)).json, [{ name: 'p1' }, { name: 'p3' }]);
      });
    });

    describe('PATCH and DELETE honour If-Match: a plant whose current ETag differs is left alone (412)', () => {
      it('refuses a PATCH with a stale tag, changing nothing, and takes the current one', async () => {
        const { id, etag } = await plant('Editor', 'v1');
        const first = await patch(id, { tag: 'v2' }, { 'if-match': etag });
        assert.equal(first.status, 200);
        const now = etagOf(first);
        const late = await patch(id, { tag: 'v2 by the second editor' }, { 'if-match': etag });
        assertError(late, 412);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Editor', tag: 'v2' }, etag: now });
        // The second editor reads again and retries with the tag it now holds.
        const reread = etagOf(await get(id));
        assert.equal((await patch(id, { tag: 'v3' }, { 'if-match': reread })).status, 200);
      });

      it('refuses a DELETE with a stale tag, keeping the plant', async () => {
        const { id, etag } = await plant('Keeper');
        const now = etagOf(await patch(id, { tag: 'changed' }));
        assertError(await remove(id, { 'if-match': etag }), 412);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Keeper', tag: 'changed' }, etag: now });
        assert.equal((await remove(id, { 'if-match': now })).status, 204);
      });

      it('uses the strong comparison: a weak form of the current tag does not match', async () => {
        const { id, etag } = await plant('Weak');
        assertError(await patch(id, { tag: 'x' }, { 'if-match': `W/${etag}` }), 412);
        assertError(await remove(id, { 'if-match': `W/${etag}` }), 412);
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Weak' }, etag });
      });

      it('matches * and a list holding the current tag', async () => {
        const a = await plant('Star');
        assert.equal((await patch(a.id, { tag: 'any' }, { 'if-match': '*' })).status, 200);
        assert.equal((await remove(a.id, { 'if-match': '*' })).status, 204);
        const b = await plant('Listed');
        assert.equal((await patch(b.id, { tag: 'l' }, { 'if-match': `"nope", ${b.etag}` })).status, 200);
      });

      it('compares tags exactly: one that names the same revision in another spelling does not match', async () => {
        const { id, etag } = await plant('Spelling');
        for (const spelling of [`"0${etag.slice(1)}`, etag.toUpperCase()]) {
          if (spelling === etag) continue; // an all-digit tag has no capitals
          assertError(await patch(id, { tag: 'x' }, { 'if-match': spelling }), 412);
        }
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Spelling' }, etag });
      });

      it('answers 404, not 412, when there is no plant', async () => {
        assertError(await patch(freshId(), { name: 'x' }, { 'if-match': '"whatever"' }), 404);
        assertError(await remove(freshId(), { 'if-match': '*' }), 404);
      });
    });

    describe('an If-Match that is not * or a list of entity tags is a 400 naming If-Match', () => {
      it('refuses unquoted and broken tags on PATCH and DELETE, changing nothing', async () => {
        const { id, etag } = await plant('Malformed', 'kept');
        for (const header of ["55'", 'abc', etag.slice(1), `${etag} "b"`, `*, ${etag}`]) {
          assertError(await patch(id, { tag: 'x' }, { 'if-match': header }), 400, /If-Match/);
          assertError(await remove(id, { 'if-match': header }), 400, /If-Match/);
        }
        assert.deepEqual(await current(id), { status: 200, body: { name: 'Malformed', tag: 'kept' }, etag });
      });

      it('takes lists with spaces and empty elements, and weak tags (which never match)', async () => {
        const { id, etag } = await plant('Well formed');
        assertError(await patch(id, { tag: 'x' }, { 'if-match': ' "nope" , , W/"old" ' }), 412);
        assert.equal((await patch(id, { tag: 'y' }, { 'if-match': `"nope", ${etag},` })).status, 200);
      });
    });

    describe('a deleted id is free again: a later create with it makes a new plant', () => {
      it('creates a different plant under the id, with a new ETag', async () => {
        const { id, etag } = await plant('First life', 'old');
        assert.equal((await remove(id)).status, 204);
        const again = await postPlant(s.url, s.token, newPlant(id, 'Second life'));
        assert.equal(again.status, 200, again.text);
        assert.deepEqual(again.json, { name: 'Second life' });
        const read = await get(id);
        assert.deepEqual(read.json, { name: 'Second life' });
        assert.notEqual(etagOf(read), etag);
        assertError(await patch(id, { tag: 'stale editor' }, { 'if-match': etag }), 412);
      });

      it('gives a new ETag even when the new plant is the same as the old one', async () => {
        const { id, etag } = await plant('Same again', 't');
        assert.equal((await remove(id)).status, 204);
        assert.equal((await postPlant(s.url, s.token, newPlant(id, 'Same again', 't'))).status, 200);
        assert.notEqual(etagOf(await get(id)), etag);
      });
    });

    describe("create's idempotent-retry rule compares with the plant as it is now", () => {
      it('after a PATCH, re-sending the original create is a 409 and sending the patched plant is a 200', async () => {
        const { id } = await plant('Before', 'tagged');
        assert.equal((await patch(id, { name: 'After', tag: null })).status, 200);
        assertError(await postPlant(s.url, s.token, newPlant(id, 'Before', 'tagged')), 409);
        const retry = await postPlant(s.url, s.token, newPlant(id, 'After'));
        assert.equal(retry.status, 200);
        assert.deepEqual(retry.json, { name: 'After' });
        assertError(await postPlant(s.url, s.token, newPlant(id, 'After', '')), 409, /\bid\b/);
      });
    });

    describe('other methods on /plants/{id} are 405 with Allow: GET, HEAD, PATCH, DELETE', () => {
      for (const method of ['PUT', 'POST', 'OPTIONS']) {
        it(`${method} /plants/{id}`, async () => {
          const { id } = await plant(`method ${method}`);
          const reply = await call(url(id), {
            method,
            token: s.token,
            headers: { 'content-type': 'application/json' },
            body: method === 'OPTIONS' ? undefined : newPlant(id, 'replaced'),
          });
          assertError(reply, 405);
          assert.equal(reply.headers.get('allow'), 'GET, HEAD, PATCH, DELETE');
          assert.deepEqual((await get(id)).json, { name: `method ${method}` });
        });
      }
    });

    describe('scopes: plants:read reads one, plants:write updates and deletes; a missing scope is 403', () => {
      it('lets a read-only token GET and HEAD but not PATCH or DELETE', async () => {
        const id = freshId();
        const reader = tokens.reader;
        const writer = (await createToken(s.database, 'by-id-reader', ['--scopes', 'plants:write'])).token;
        assert.equal((await postPlant(s.url, writer, newPlant(id, 'Readable'))).status, 200);
        assert.deepEqual((await get(id, {}, reader)).json, { name: 'Readable' });
        assert.equal((await head(id, {}, reader)).status, 200);
        for (const reply of [await patch(id, { name: 'no' }, {}, reader), await remove(id, {}, reader)]) {
          assertError(reply, 403);
          assert.match(reply.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
        }
        assert.deepEqual((await get(id, {}, reader)).json, { name: 'Readable' });
      });

      it('lets a write-only token PATCH and DELETE but not GET', async () => {
        const id = freshId();
        const writer = tokens.writer;
        assert.equal((await postPlant(s.url, writer, newPlant(id, 'Writable'))).status, 200);
        const read = await get(id, {}, writer);
        assertError(read, 403);
        assert.match(read.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
        assert.equal((await head(id, {}, writer)).status, 403);
        assert.deepEqual((await patch(id, { tag: 'w' }, {}, writer)).json, { name: 'Writable', tag: 'w' });
        assert.equal((await remove(id, {}, writer)).status, 204);
        assert.equal((await remove(id, {}, writer)).status, 404);
      });

      it('answers 401 without a token, before looking at the id or the body', async () => {
        for (const reply of [
          await call(url('007')),
          await call(url('1'), { method: 'PATCH', headers: { 'content-type': 'text/plain' }, body: 'x' }),
          await call(url('1'), { method: 'DELETE' }),
        ]) {
          assertError(reply, 401);
          assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store"/);
        }
      });
    });

    describe('the served document has getPlant, updatePlant and deletePlant with every status', () => {
      it('documents each operation on /plants/{id}', async () => {
        type Operation = { operationId: string; responses: Record<string, unknown>; parameters?: { name: string }[] };
        const document = (await call(`${s.url}/openapi.json`)).json as {
          paths: Record<string, Record<string, Operation>>;
        };
        const path = document.paths['/plants/{id}'];
        assert.ok(path, 'the path /plants/{id} is documented');
        const expected: Record<string, [string, string[]]> = {
          get: ['getPlant', ['200', '304', '400', '401', '403', '404', '429', '500', '503']],
          patch: ['updatePlant', ['200', '400', '401', '403', '404', '412', '413', '415', '429', '500', '503']],
          delete: ['deletePlant', ['204', '400', '401', '403', '404', '412', '429', '500', '503']],
        };
        for (const [method, [operationId, statuses]] of Object.entries(expected)) {
          const operation = path[method]!;
          assert.equal(operation.operationId, operationId);
          for (const status of statuses) assert.ok(operation.responses[status], `${operationId} documents ${status}`);
          assert.ok(
            operation.parameters?.some((p) => p.name === 'id'),
            `${operationId} documents the id parameter`,
          );
        }
        assert.equal(document.paths['/plants']!.post!.operationId, 'addPlant');
        assert.equal(document.paths['/plants']!.get!.operationId, 'listPlants');
      });
    });
  });
}
