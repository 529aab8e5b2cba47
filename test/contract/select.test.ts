import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ENGINES_AND_POOLER } from '../helpers/engines.js';
import { call, listPlants, nextLink, postBatch, type Reply } from '../helpers/http.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** Ids that JSON.parse would change or merge: compared as the text the server wrote. */
const IDS = ['-9223372036854775808', '9007199254740992', '9007199254740993', '9223372036854775807', '7'];
const PLANTS = IDS.map((id, i) => `{"id":${id},"name":"Fern ${i}"${i % 2 === 0 ? ',"tag":"fern"' : ''}}`);

/** The ids of a JSON answer, as written (never through a double). */
function idsOf(reply: Reply): string[] {
  return [...reply.text.matchAll(/"id":(-?\d+)/g)].map((match) => match[1]!);
}

/** Every page of `first`, following rel="next": the concatenated ids, and the pages' count. */
async function pagedIds(token: string, first: string, headers: Record<string, string> = {}) {
  const ids: string[] = [];
  let pages = 0;
  for (let url: string | null = first; url !== null && pages <= IDS.length; pages++) {
    const reply = await call(url, { token, headers });
    assert.equal(reply.status, 200, reply.text);
    ids.push(...idsOf(reply));
    url = nextLink(reply);
  }
  return { ids, pages };
}

const ascending = [...IDS].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));

for (const engine of ENGINES_AND_POOLER) {
  describe(`select: ids when asked for (${engine.name})`, { skip: engine.skip }, () => {
    const s = realServer(engine);
    before(async () => {
      const reply = await postBatch(s.url, s.token, `[${PLANTS.join(',')}]`);
      assert.equal(reply.status, 200, reply.text);
    });

    describe('without select every answer is the spec’s Plant, as before', () => {
      it('lists and reads without ids', async () => {
        const reply = await listPlants(s.url, s.token, '?limit=2');
        assert.equal(reply.text, '[{"name":"Fern 0","tag":"fern"},{"name":"Fern 4","tag":"fern"}]');
        assert.equal((await call(`${s.url}/plants/7`, { token: s.token })).text, '{"name":"Fern 4","tag":"fern"}');
      });
    });

    describe('select names the fields of each plant, in its order, ids exact over int64', () => {
      it('answers a streamed listing with the fields asked for', async () => {
        const reply = await listPlants(s.url, s.token, '?select=id,name');
        assert.equal(reply.status, 200);
        assert.deepEqual(idsOf(reply), ascending);
        assert.match(reply.text, /^\[\{"id":-9223372036854775808,"name":"Fern 0"\},/);
        assert.doesNotMatch(reply.text, /"tag"/);
      });
      it('answers a read by id in the order select names, tag omitted when the plant has none', async () => {
        const tagged = await call(`${s.url}/plants/9007199254740993?select=tag,id`, { token: s.token });
        assert.equal(tagged.text, '{"tag":"fern","id":9007199254740993}');
        const untagged = await call(`${s.url}/plants/9223372036854775807?select=tag,name,id`, { token: s.token });
        assert.equal(untagged.text, '{"name":"Fern 3","id":9223372036854775807}');
        const idOnly = await call(`${s.url}/plants/-9223372036854775808?select=id`, { token: s.token });
        assert.equal(idOnly.text, '{"id":-9223372036854775808}');
      });
      it('keeps the ETag of the plant whatever select asks', async () => {
        const plain = await call(`${s.url}/plants/7`, { token: s.token });
        const selected = await call(`${s.url}/plants/7?select=id`, { token: s.token });
        assert.equal(selected.headers.get('etag'), plain.headers.get('etag'));
        const revalidated = await call(`${s.url}/plants/7?select=id`, {
          token: s.token,
          headers: { 'if-none-match': plain.headers.get('etag')! },
        });
        assert.equal(revalidated.status, 304);
      });
    });

    describe('select works with every filter, order, cursor and count', () => {
      for (const [query, expected] of [
        ['sort=-id', [...ascending].reverse()],
        ['sort=name', IDS],
        ['sort=-name&tag=fern', [IDS[4], IDS[2], IDS[0]]],
        ['q=FERN%203', [IDS[3]]],
      ] as const) {
        it(`pages ${query} one plant at a time, ids exact`, async () => {
          const first = `${s.url}/plants?limit=1&${query}&select=id,tag`;
          const { ids, pages } = await pagedIds(s.token, first, { prefer: 'count=exact' });
          assert.deepEqual(ids, expected);
          assert.equal(pages, expected.length);
          const counted = await call(first, { token: s.token, headers: { prefer: 'count=exact' } });
          assert.equal(counted.headers.get('x-total-count'), String(expected.length));
        });
      }
    });

    describe('a page cached for one select is never served for another', () => {
      it('answers the same page under each select as that select asks', async () => {
        for (let round = 0; round < 2; round++) {
          for (const [select, text] of [
            ['', '[{"name":"Fern 0","tag":"fern"}]'],
            ['&select=id', '[{"id":-9223372036854775808}]'],
            ['&select=name,id', '[{"name":"Fern 0","id":-9223372036854775808}]'],
          ]) {
            assert.equal((await listPlants(s.url, s.token, `?limit=1${select}`)).text, text, `${round} ${select}`);
          }
        }
      });
    });

    describe('an unknown, repeated or empty field is a 400 naming select and the field', () => {
      for (const [select, named] of [
        ['id,colour', /select.*"colour"/],
        ['id,name,id', /select.*\bid\b.*more than once/],
        ['', /select.*""/],
        ['id,', /select.*""/],
        ['ID', /select.*"ID"/],
        [' id', /select.*" id"/],
      ] as const) {
        for (const path of ['/plants', '/plants?limit=1&', '/plants/7']) {
          it(`refuses select=${JSON.stringify(select)} on ${path}`, async () => {
            const separator = path.endsWith('&') ? '' : '?';
            const reply = await call(`${s.url}${path}${separator}select=${encodeURIComponent(select)}`, {
              token: s.token,
            });
            assert.equal(reply.status, 400, reply.text);
            assert.ok(isErrorBody(reply));
            assert.match((reply.json as { message: string }).message, named);
          });
        }
      }
      it('refuses select given twice', async () => {
        const reply = await listPlants(s.url, s.token, '?select=id&select=name');
        assert.equal(reply.status, 400);
        assert.match((reply.json as { message: string }).message, /select/);
      });
    });
  });
}
