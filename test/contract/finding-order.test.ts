import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { compareCodePoints } from '../helpers/code-points.js';
import { ENGINES } from '../helpers/engines.js';
import { allPages, call, listPlants, nextLink, postBatch } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

const INT64_MIN = -9223372036854775808n;
const INT64_MAX = 9223372036854775807n;

/**
 * Ids over the whole int64 range, names where UTF-16 order and code point order disagree (U+FF21
 * against U+1F335, a surrogate pair), ties, several scripts; tags a, b or none. Built as JSON text
 * so the ids stay exact.
 */
const NAMES = [
  'Ａ',
  '🌵',
  'b',
  'B',
  'a',
  'Ä',
  'ä',
  'ΣΊΣ',
  'σίς',
  'Жасмин',
  'tie',
  'tie',
  'tie',
  '𐐀',
  '\u{10FFFF}',
  'z',
];
const IDS = [INT64_MAX, INT64_MIN, 0n, -1n, 1n, 9007199254740993n, 9007199254740992n, 42n, -42n, 7n, 3n, -3n, 5n];
const PLANTS = NAMES.map((name, i) => ({
  id: IDS[i] ?? BigInt(1000 + i),
  name: `${name}`,
  tag: ['a', 'b', null][i % 3]!,
}));
const json = (plants: typeof PLANTS) =>
  `[${plants
    .map((p) => `{"id":${p.id},"name":${JSON.stringify(p.name)}${p.tag === null ? '' : `,"tag":"${p.tag}"`}}`)
    .join(',')}]`;

const byId = (a: (typeof PLANTS)[number], b: (typeof PLANTS)[number]) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const byName = (a: (typeof PLANTS)[number], b: (typeof PLANTS)[number]) =>
  compareCodePoints(a.name, b.name) || byId(a, b);
const EXPECTED: Record<string, typeof PLANTS> = {
  id: [...PLANTS].sort(byId),
  '-id': [...PLANTS].sort(byId).reverse(),
  name: [...PLANTS].sort(byName),
  '-name': [...PLANTS].sort(byName).reverse(),
};

for (const engine of ENGINES) {
  describe(`GET /plants?sort= and paging (${engine.name})`, () => {
    const s = realServer(engine);
    let token = '';
    before(async () => {
      token = (await createToken(s.database, `order-${engine.name}`)).token;
      assert.equal((await postBatch(s.url, token, json(PLANTS))).status, 200);
    });
    const names = (plants: typeof PLANTS) => plants.map((p) => p.name);

    describe('sort orders by id or by the code points of the name, ties by id', () => {
      for (const sort of ['id', '-id', 'name', '-name']) {
        it(`sort=${sort}`, async () => {
          const reply = await listPlants(s.url, token, `?sort=${sort}`);
          assert.equal(reply.status, 200);
          assert.deepEqual(
            (reply.json as Array<{ name: string }>).map((p) => p.name),
            names(EXPECTED[sort]!),
          );
        });
      }
      it('puts U+FF21 before U+1F335 (UTF-16 would not) and -name is the exact reverse of name', async () => {
        const order = ((await listPlants(s.url, token, '?sort=name')).json as Array<{ name: string }>).map(
          (p) => p.name,
        );
        assert.ok(order.indexOf('Ａ') < order.indexOf('🌵'));
        const reverse = ((await listPlants(s.url, token, '?sort=-name')).json as Array<{ name: string }>).map(
          (p) => p.name,
        );
        assert.deepEqual(reverse, [...order].reverse());
      });
    });

    describe('paging: following next links visits every match once, for every filter and order', () => {
      const filters: Record<string, (p: (typeof PLANTS)[number]) => boolean> = {
        '': () => true,
        'tag=a': (p) => p.tag === 'a',
        'tag=a&tag=b': (p) => p.tag !== null,
        'q=T': (p) => p.name.toLowerCase().includes('t'),
        'q=tie&tag=b': (p) => p.name === 'tie' && p.tag === 'b',
      };
      for (const [filter, matches] of Object.entries(filters)) {
        for (const sort of ['id', '-id', 'name', '-name']) {
          for (const limit of [1, 2, 5]) {
            it(`${filter || 'no filter'}, sort=${sort}, limit=${limit}`, async () => {
              const query = `${filter}&sort=${sort}&limit=${limit}`;
              const { names: seen } = await allPages(token, `${s.url}/plants?${query}`);
              assert.deepEqual(seen, names(EXPECTED[sort]!.filter(matches)));
            });
          }
        }
      }
      it('the streamed list without limit is the same filtered list', async () => {
        const reply = await listPlants(s.url, token, '?tag=a&tag=b&sort=-name');
        const expected = EXPECTED['-name']!.filter((p) => p.tag !== null);
        assert.deepEqual(
          (reply.json as Array<{ name: string }>).map((p) => p.name),
          names(expected),
        );
      });
    });

    describe('a cursor used with other filters or order, or altered, is 400 naming cursor', () => {
      async function cursorOf(query: string): Promise<string> {
        const next = nextLink(await listPlants(s.url, token, query));
        assert.ok(next);
        return new URL(next).searchParams.get('cursor')!;
      }
      const refused = async (query: string) => {
        const reply = await listPlants(s.url, token, query);
        assert.equal(reply.status, 400, query);
        assert.ok(isErrorBody(reply));
        assert.match((reply.json as { message: string }).message, /^cursor /);
      };
      it('another order', async () => {
        const cursor = await cursorOf('?sort=name&limit=2');
        await refused(`?sort=-name&limit=2&cursor=${cursor}`);
        await refused(`?limit=2&cursor=${cursor}`);
      });
      it('other filters', async () => {
        const cursor = await cursorOf('?tag=a&limit=1');
        await refused(`?tag=b&limit=1&cursor=${cursor}`);
        await refused(`?limit=1&cursor=${cursor}`);
        await refused(`?tag=a&q=t&limit=1&cursor=${cursor}`);
        const searched = await cursorOf('?q=t&limit=1');
        await refused(`?q=ti&limit=1&cursor=${searched}`);
      });
      it('altered, empty or repeated', async () => {
        const cursor = await cursorOf('?limit=2');
        const flipped = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4);
        await refused(`?limit=2&cursor=${flipped}`);
        await refused(`?limit=2&cursor=${cursor}x`);
        await refused('?limit=2&cursor=');
        await refused('?limit=2&cursor=not-a-cursor');
        await refused(`?limit=2&cursor=${cursor}&cursor=${cursor}`);
      });
      it('the same tags in another order keep their cursor', async () => {
        const cursor = await cursorOf('?tag=a&tag=b&limit=1');
        const reply = await listPlants(s.url, token, `?tag=b&tag=a&limit=1&cursor=${cursor}`);
        assert.equal(reply.status, 200, reply.text);
        // The second page of the tagged plants, in id order: the one after the first page's.
        const second = EXPECTED.id!.filter((p) => p.tag !== null)[1]!;
        assert.deepEqual(reply.json, [{ name: second.name, tag: second.tag }]);
      });
    });

    describe('Prefer: count=exact answers X-Total-Count over all pages', () => {
      const counted = (query: string, prefer = 'count=exact') =>
        call(`${s.url}/plants${query}`, { token, headers: { prefer } });
      it('on a page, a filtered list, the streamed list and a later page', async () => {
        for (const [query, total] of [
          ['?limit=2', PLANTS.length],
          ['?tag=a&limit=1', PLANTS.filter((p) => p.tag === 'a').length],
          ['?q=tie', 3],
          ['?q=nothing-matches', 0],
        ] as const) {
          const reply = await counted(query);
          assert.equal(reply.status, 200);
          assert.equal(reply.headers.get('x-total-count'), String(total), query);
          assert.equal(reply.headers.get('preference-applied'), 'count=exact');
        }
        // Every page of a paged list, the last included, counts the whole list.
        const tagged = PLANTS.filter((p) => p.tag === 'b').length;
        let pages = 0;
        for (let url: string | null = `${s.url}/plants?tag=b&limit=1`; url !== null; pages++) {
          const reply = await call(url, { token, headers: { prefer: 'count=exact' } });
          assert.equal(reply.status, 200);
          assert.equal(reply.headers.get('x-total-count'), String(tagged), `page ${pages}`);
          url = nextLink(reply);
        }
        assert.equal(pages, tagged);
      });
      it('among other preferences, in any case', async () => {
        const reply = await counted('?limit=1', 'return=minimal, COUNT="exact"; x=y');
        assert.equal(reply.headers.get('x-total-count'), String(PLANTS.length));
      });
      it('without it (or with another count) nothing is counted', async () => {
        for (const reply of [await listPlants(s.url, token, '?limit=1'), await counted('?limit=1', 'count=planned')]) {
          assert.equal(reply.headers.get('x-total-count'), null);
          assert.equal(reply.headers.get('preference-applied'), null);
        }
      });
    });
  });
}
