import assert from 'node:assert/strict';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { DEFAULTS } from '../../src/config.js';
import { LIMITS } from '../../src/limits.js';
import { PLANT_COLUMNS } from '../../src/plant-fields.js';
import { pageBody } from '../../src/plants/list-route.js';
import { FreshPages } from '../../src/plants/fresh-pages.js';
import { PageCache, pageCost } from '../../src/plants/page-cache.js';
import type { Page } from '../../src/plants/page-cache.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { openStorage } from '../../src/storage/open.js';
import { ENGINES, pg, sqlite } from '../helpers/engines.js';
import { insertPlants } from '../helpers/plants.js';

const PAGE_CACHE_BYTES = DEFAULTS.pageCacheBytes;

const page = (...names: string[]): Page => ({
  plants: names.map((name, i) => ({ id: BigInt(i), name })),
  next: null,
  shared: true,
});

/** The names of the first page of `?limit=10` and `query`, through the API. */
async function listedNames(t: TestApp, token: string, query = ''): Promise<string[]> {
  const url = query === '' ? '/plants?limit=10' : `/plants?limit=10&${query}`;
  const reply = await t.app.inject({ url, headers: { authorization: `Bearer ${token}` } });
  assert.equal(reply.statusCode, 200);
  return (reply.json() as { name: string }[]).map((plant) => plant.name);
}

/** Pages asked of the cache so far, by result, as /metrics counts them (one registry for the test process). */
async function cacheLookups(t: TestApp): Promise<{ hit: number; miss: number }> {
  const text = (await t.app.inject({ url: '/metrics' })).body;
  const count = (result: string) =>
    Number(
      new RegExp(`^plant_store_page_cache_lookups_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0,
    );
  return { hit: count('hit'), miss: count('miss') };
}

const cacheHits = async (t: TestApp) => (await cacheLookups(t)).hit;

describe('the page cache answers only what the store would answer now', () => {
  it('serves a page again while the store version stays the same', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    assert.equal(cache.get(1, 'a', 'plain', 10), undefined);
    const first = page('Fern');
    assert.equal(cache.set(1, 0, 'a', 'plain', 10, first), true, 'kept');
    assert.equal(cache.get(1, 'a', 'plain', 10), first);
  });

  it('drops every page, of every account, once the version moves (a commit by another process)', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 10);
    cache.set(1, 0, 'a', 'plain', 10, page('Fern'));
    cache.set(1, 0, 'b', 'plain', 10, page('Moss'));
    assert.equal(cache.get(2, 'a', 'plain', 10), undefined);
    assert.equal(cache.get(2, 'a', 'plain', 10), undefined, 'nothing of version 1 comes back');
    assert.equal(cache.get(2, 'b', 'plain', 10), undefined, 'nor of any other account');
  });

  it('keeps nothing read at a version older than the current one', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(2, 'a', 'plain', 10);
    assert.equal(cache.set(1, 0, 'a', 'plain', 10, page('stale')), false, 'not kept');
    assert.equal(cache.get(2, 'a', 'plain', 10), undefined);
  });

  it('keys pages by account, listing and limit, with no account or listing mistaken for another', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, '', 'plain', 0);
    const pages: [string, string, number][] = [
      ['a', 'plain', 10],
      ['a:', 'plain', 10],
      ['a', 'after 1', 10],
      ['a', 'after 11', 0],
      ['a', 'plain', 1],
      ['1:a', 'plain', 10],
      ['a:1', 'after 0', 10],
      ['a', '10:plain', 1],
      ['a', 'tag t', 10],
    ];
    for (const [i, [account, after, limit]] of pages.entries())
      cache.set(1, 0, account, after, limit, page(`plant ${i}`));
    for (const [i, [account, after, limit]] of pages.entries()) {
      assert.deepEqual(cache.get(1, account, after, limit), page(`plant ${i}`), `${account} ${after} ${limit}`);
    }
  });

  it(`holds at most ${PAGE_CACHE_BYTES} bytes of pages, dropping the oldest pages first`, () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    const thousand = (tag: string) => page(...Array.from({ length: 1_000 }, (_, i) => `${tag}${i}`.padEnd(256, '~')));
    const fitting = Math.floor(PAGE_CACHE_BYTES / pageCost(thousand('p0')));
    for (let i = 0; i <= fitting; i++) cache.set(1, 0, 'a', `after ${i}`, 1_000, thousand(`p${i}`));
    assert.equal(cache.get(1, 'a', 'after 0', 1_000), undefined, 'the oldest page made room');
    for (let i = 1; i <= fitting; i++) assert.ok(cache.get(1, 'a', `after ${i}`, 1_000), `page ${i} kept`);
  });

  it('counts what a page holds: long names and tags count more than short ones', () => {
    const short = page(...Array.from({ length: 10 }, () => 'Fern'));
    const long = page(...Array.from({ length: 10 }, () => 'Fern'.repeat(64)));
    assert.ok(pageCost(long) > pageCost(short));
    const tagged: Page = { plants: [{ id: 0n, name: 'Fern', tag: 'x'.repeat(256) }], next: null, shared: true };
    assert.ok(pageCost(tagged) > pageCost(page('Fern')));
  });

  it('takes no more memory than its bound, with the JSON text of every page, for the costliest names and tags', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // 256 UTF-16 units each, every one escaped in JSON, in strings made two-byte by the emoji.
    const costliest = (p: number): Page => ({
      plants: Array.from({ length: 1_000 }, (_, i) => ({
        id: LIMITS.int64Min + BigInt(p * 1_000 + i),
        name: `${p}.${i}🌿`.padEnd(256, '\u0001'),
        tag: `${p}.${i}`.padEnd(256, '\u0002'),
      })),
      next: null,
      shared: true,
    });
    gc();
    const before = process.memoryUsage().heapUsed;
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    const bodies = new WeakMap<Page, string>();
    const tried = 2 * Math.ceil(PAGE_CACHE_BYTES / pageCost(costliest(0)));
    for (let i = 0; i < tried; i++) {
      const held = costliest(i);
      if (cache.set(1, 0, 'a', `after ${i}`, 1_000, held)) bodies.set(held, pageBody(held, PLANT_COLUMNS));
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    assert.ok(grown <= PAGE_CACHE_BYTES, `the heap grew by ${grown} bytes`);
    assert.ok(cache.get(1, 'a', `after ${tried - 1}`, 1_000), 'the last page is held');
  });

  it('counts an empty page too, so pages past the end cannot fill memory', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    const fitting = Math.floor(PAGE_CACHE_BYTES / pageCost(page()));
    for (let i = 0; i <= fitting; i++) cache.set(1, 0, 'a', `after ${i}`, 10, page());
    assert.equal(cache.get(1, 'a', 'after 0', 10), undefined, 'the oldest empty page made room');
    assert.deepEqual(cache.get(1, 'a', `after ${fitting}`, 10), page());
  });

  it('counts a page stored again under the same key once', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    const thousand = page(...Array.from({ length: 1_000 }, (_, i) => `p${i}`));
    const fitting = Math.floor(PAGE_CACHE_BYTES / pageCost(thousand));
    for (let i = 0; i < 10; i++) cache.set(1, 0, 'a', 'plain', 1_000, thousand);
    for (let i = 1; i < fitting; i++) cache.set(1, 0, 'b', `after ${i}`, 1_000, thousand);
    assert.equal(cache.get(1, 'a', 'plain', 1_000), thousand, 'as many pages as fit once: nothing evicted');
  });

  it('does not keep a page of more than 1,000 plants', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    assert.equal(
      cache.set(1, 0, 'a', 'plain', 1_001, page(...Array.from({ length: 1_001 }, (_, i) => `p${i}`))),
      false,
    );
    assert.equal(cache.get(1, 'a', 'plain', 1_001), undefined);
  });
});

describe('a commit by this process drops only the pages of the accounts it wrote', () => {
  it('keeps the pages of every other account', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    for (const account of ['a', 'b', 'c']) cache.set(1, 0, account, 'plain', 10, page(`${account} plant`));
    cache.set(1, 0, 'a', 'after 5', 10, page('a later plant'));
    cache.noteOwnCommit(['a', 'c']);
    assert.equal(cache.get(1, 'a', 'plain', 10), undefined, "a's first page is gone");
    assert.equal(cache.get(1, 'a', 'after 5', 10), undefined, "a's later page is gone");
    assert.equal(cache.get(1, 'c', 'plain', 10), undefined, "c's page is gone");
    assert.deepEqual(cache.get(1, 'b', 'plain', 10), page('b plant'), "b's page stays");
  });

  it('does not keep a page read while its account committed, and keeps one of another account', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    const since = cache.commitsSoFar();
    cache.noteOwnCommit(['a']);
    assert.equal(cache.set(1, since, 'a', 'plain', 10, page('read before the commit')), false, 'not kept');
    assert.equal(cache.get(1, 'a', 'plain', 10), undefined);
    assert.equal(cache.set(1, since, 'b', 'plain', 10, page('b plant')), true, "b's page is kept");
    assert.equal(
      cache.set(1, cache.commitsSoFar(), 'a', 'plain', 10, page('read after')),
      true,
      'a later read is kept',
    );
  });

  it('refuses every read begun before it forgot which accounts committed (past 10,000 accounts)', () => {
    const cache = new PageCache(PAGE_CACHE_BYTES);
    cache.get(1, 'a', 'plain', 0);
    const since = cache.commitsSoFar();
    for (let i = 0; i <= 10_000; i++) cache.noteOwnCommit([`account ${i}`]);
    assert.equal(cache.set(1, since, 'never committed', 'plain', 10, page('old read')), false, 'not kept');
    assert.equal(cache.set(1, cache.commitsSoFar(), 'never committed', 'plain', 10, page('new read')), true);
  });
});

describe('the page cache through the API: a create by one account leaves the other accounts their pages', () => {
  let t: TestApp;
  const tokens: Record<string, string> = {};
  before(async () => {
    t = await testApp(sqlite);
    for (const account of ['writer', 'reader']) {
      tokens[account] = await t.token(account);
      for (const id of [1, 2, 3]) await create(account, id);
    }
  });
  after(() => t.close());

  async function create(account: string, id: number) {
    const reply = await t.app.inject({
      method: 'POST',
      url: '/plants',
      headers: { authorization: `Bearer ${tokens[account]}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ id, name: `${account} ${id}` }),
    });
    assert.equal(reply.statusCode, 200);
  }

  const firstPage = (account: string) => listedNames(t, tokens[account]!);
  const lookups = () => cacheLookups(t);

  it('counts hits and misses in /metrics, answers the other account from memory, and shows the new plant at once', async () => {
    await firstPage('reader');
    await firstPage('writer');
    const start = await lookups();
    assert.deepEqual(await firstPage('reader'), ['reader 1', 'reader 2', 'reader 3']);
    assert.deepEqual(await lookups(), { hit: start.hit + 1, miss: start.miss }, 'a page served again is a hit');

    await create('writer', 4);
    assert.deepEqual(await firstPage('reader'), ['reader 1', 'reader 2', 'reader 3']);
    assert.deepEqual(
      await lookups(),
      { hit: start.hit + 2, miss: start.miss },
      "the reader's page survived the create",
    );
    assert.deepEqual(
      await firstPage('writer'),
      ['writer 1', 'writer 2', 'writer 3', 'writer 4'],
      'the new plant, at once',
    );
    assert.deepEqual(await lookups(), { hit: start.hit + 2, miss: start.miss + 1 }, "the writer's page was read again");
  });
});

describe('the page cache serves filtered, searched and sorted listings too, exact to the store', () => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await testApp(sqlite);
    token = await t.token('gardener');
    for (const [id, name, tag] of [
      [1, 'Blue Fern', 'shade'],
      [2, 'Aloe', 'sun'],
      [3, 'Cactus fern', 'sun'],
    ] as const) {
      await send('POST', '/plants', { id, name, tag });
    }
  });
  after(() => t.close());

  async function send(method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) {
    const reply = await t.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body && { payload: JSON.stringify(body) }),
    });
    assert.ok(reply.statusCode < 300, `${method} ${url}: ${reply.statusCode} ${reply.body}`);
  }

  const names = (query: string) => listedNames(t, token, query);
  const hits = () => cacheHits(t);

  const LISTINGS = ['tag=sun', 'q=FERN', 'sort=-name', 'tag=sun&sort=name&q=c'];

  it('answers the same listing again from memory, each listing its own page', async () => {
    const first = await Promise.all(LISTINGS.map((query) => names(query)));
    assert.deepEqual(first, [
      ['Aloe', 'Cactus fern'],
      ['Blue Fern', 'Cactus fern'],
      ['Cactus fern', 'Blue Fern', 'Aloe'],
      ['Cactus fern'],
    ]);
    const before = await hits();
    for (const [i, query] of LISTINGS.entries()) assert.deepEqual(await names(query), first[i], query);
    assert.equal(await hits(), before + LISTINGS.length, 'every listing served again is a hit');
  });

  it('shows a create, a rename and a delete in every listing at once', async () => {
    await Promise.all(LISTINGS.map((query) => names(query)));
    await send('POST', '/plants', { id: 4, name: 'Sun fern', tag: 'sun' });
    assert.deepEqual(await names('tag=sun'), ['Aloe', 'Cactus fern', 'Sun fern']);
    assert.deepEqual(await names('q=FERN'), ['Blue Fern', 'Cactus fern', 'Sun fern']);
    await send('PATCH', '/plants/3', { name: 'Cactus' });
    assert.deepEqual(await names('q=FERN'), ['Blue Fern', 'Sun fern']);
    assert.deepEqual(await names('sort=-name'), ['Sun fern', 'Cactus', 'Blue Fern', 'Aloe']);
    await send('DELETE', '/plants/2');
    assert.deepEqual(await names('tag=sun'), ['Cactus', 'Sun fern']);
    assert.deepEqual(await names('tag=sun&sort=name&q=c'), ['Cactus']);
  });
});

describe('--page-cache-bytes 0 keeps no page: every listing is read from the store', () => {
  it('counts no lookup however often a page is asked', async () => {
    const t = await testApp(sqlite, { pageCacheBytes: 0 });
    try {
      const token = await t.token('gardener');
      const lookups = async () => {
        const { hit, miss } = await cacheLookups(t);
        return hit + miss;
      };
      const before = await lookups();
      for (let i = 0; i < 3; i++) {
        const reply = await t.app.inject({ url: '/plants?limit=10', headers: { authorization: `Bearer ${token}` } });
        assert.equal(reply.statusCode, 200);
      }
      assert.equal(await lookups(), before);
    } finally {
      await t.close();
    }
  });
});

for (const engine of ENGINES.filter((e) => e === pg)) {
  describe("on PostgreSQL the page cache follows each account's number in the change feed, whoever writes", () => {
    let t: TestApp;
    let token: string;
    before(async () => {
      t = await testApp(engine);
      token = await t.token('gardener');
      await insertPlants(t.storage, [{ account: 'gardener', plant: { id: 1n, name: 'Fern', tag: 'shade' } }]);
    });
    after(() => t.close());

    const names = (query: string) => listedNames(t, token, query);
    const hits = () => cacheHits(t);

    it('answers a page asked again from memory', async () => {
      assert.deepEqual(await names('tag=shade'), ['Fern']);
      const before = await hits();
      assert.deepEqual(await names('tag=shade'), ['Fern']);
      assert.equal(await hits(), before + 1);
    });

    it('shows at once every change committed by another instance, which never told this one', async () => {
      const other = await openStorage(t.database);
      try {
        assert.deepEqual(await names('tag=shade'), ['Fern']);
        await insertPlants(other, [{ account: 'gardener', plant: { id: 2n, name: 'Moss', tag: 'shade' } }]);
        assert.deepEqual(await names('tag=shade'), ['Fern', 'Moss']);
        await other.applyChanges([
          { kind: 'update', account: 'gardener', id: 1n, set: { tag: 'sun' }, revision: 7n, eventId: 'msg_other_1' },
        ]);
        assert.deepEqual(await names('tag=shade'), ['Moss']);
        await other.applyChanges([{ kind: 'delete', account: 'gardener', id: 2n, eventId: 'msg_other_2' }]);
        assert.deepEqual(await names('tag=shade'), []);
      } finally {
        await other.close();
      }
    });

    it('keeps no page when the change feed is off (no number per account to go by)', async () => {
      const feedless = await openStorage(t.database, { feed: false });
      try {
        assert.equal(feedless.accountVersions, undefined);
        assert.equal(FreshPages.of(feedless, DEFAULTS.pageCacheBytes), null);
      } finally {
        await feedless.close();
      }
    });
  });
}

for (const sqliteWriter of ['thread', 'inline'] as const) {
  describe(`the page cache through the API: a plant another process writes is in the next page (--sqlite-writer ${sqliteWriter})`, () => {
    let t: TestApp;
    let token: string;
    before(async () => {
      t = await testApp(sqlite, { sqliteWriter });
      token = await t.token('shared');
    });
    after(() => t.close());

    const firstPage = () => listedNames(t, token);

    it('serves the page from memory, then with the plant a second store on the same file created', async () => {
      await insertPlants(t.storage, [{ account: 'shared', plant: { id: 1n, name: 'mine', tag: null } }]);
      assert.deepEqual(await firstPage(), ['mine']);
      assert.deepEqual(await firstPage(), ['mine'], 'cached');
      const other = await openStorage(t.database); // another process's connections and writer thread
      try {
        await insertPlants(other, [{ account: 'shared', plant: { id: 2n, name: 'theirs', tag: null } }]);
        assert.deepEqual(await firstPage(), ['mine', 'theirs']);
      } finally {
        await other.close();
      }
    });
  });
}
