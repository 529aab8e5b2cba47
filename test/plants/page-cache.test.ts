import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PageCache } from '../../src/plants/page-cache.js';
import type { Page } from '../../src/plants/service.js';

const page = (...names: string[]): Page => ({ plants: names.map((name) => ({ name })), next: null, shared: true });

describe('the page cache answers only what the store would answer now', () => {
  it('serves a page again while the store version stays the same', () => {
    const cache = new PageCache();
    assert.equal(cache.get(1, 'a', null, 10), undefined);
    const first = page('Fern');
    assert.equal(cache.set(1, 'a', null, 10, first), true, 'kept');
    assert.equal(cache.get(1, 'a', null, 10), first);
  });

  it('drops every page once the version moves', () => {
    const cache = new PageCache();
    cache.get(1, 'a', null, 10);
    cache.set(1, 'a', null, 10, page('Fern'));
    assert.equal(cache.get(2, 'a', null, 10), undefined);
    assert.equal(cache.get(2, 'a', null, 10), undefined, 'nothing of version 1 comes back');
  });

  it('keeps nothing read at a version older than the current one', () => {
    const cache = new PageCache();
    cache.get(2, 'a', null, 10);
    assert.equal(cache.set(1, 'a', null, 10, page('stale')), false, 'not kept');
    assert.equal(cache.get(2, 'a', null, 10), undefined);
  });

  it('keys pages by account, cursor and limit, with no account mistaken for another', () => {
    const cache = new PageCache();
    cache.get(1, '', null, 0);
    const pages: [string, bigint | null, number][] = [
      ['a', null, 10],
      ['a:', null, 10],
      ['a', 1n, 10],
      ['a', 11n, 0],
      ['a', null, 1],
      ['1:a', null, 10],
      ['a:1', 0n, 10],
    ];
    pages.forEach(([account, after, limit], i) => cache.set(1, account, after, limit, page(`plant ${i}`)));
    pages.forEach(([account, after, limit], i) =>
      assert.deepEqual(cache.get(1, account, after, limit), page(`plant ${i}`), `${account} ${after} ${limit}`),
    );
  });

  it('holds at most 5,000 plants, dropping the oldest pages first', () => {
    const cache = new PageCache();
    cache.get(1, 'a', null, 0);
    const thousand = (tag: string) => page(...Array.from({ length: 1_000 }, (_, i) => `${tag}${i}`));
    for (let i = 0; i < 6; i++) cache.set(1, 'a', BigInt(i), 1_000, thousand(`p${i}`));
    assert.equal(cache.get(1, 'a', 0n, 1_000), undefined, 'the oldest page made room');
    for (let i = 1; i < 6; i++) assert.ok(cache.get(1, 'a', BigInt(i), 1_000), `page ${i} kept`);
  });

  it('counts an empty page as one plant, so pages past the end cannot fill memory', () => {
    const cache = new PageCache();
    cache.get(1, 'a', null, 0);
    for (let i = 0; i <= 5_000; i++) cache.set(1, 'a', BigInt(i), 10, page());
    assert.equal(cache.get(1, 'a', 0n, 10), undefined, 'the oldest empty page made room');
    assert.deepEqual(cache.get(1, 'a', 5_000n, 10), page());
  });

  it('counts a page stored again under the same key once', () => {
    const cache = new PageCache();
    cache.get(1, 'a', null, 0);
    const thousand = page(...Array.from({ length: 1_000 }, (_, i) => `p${i}`));
    for (let i = 0; i < 10; i++) cache.set(1, 'a', null, 1_000, thousand);
    for (let i = 1; i <= 4; i++) cache.set(1, 'b', BigInt(i), 1_000, thousand);
    assert.equal(cache.get(1, 'a', null, 1_000), thousand, 'five pages of 1,000 fit: nothing evicted');
  });

  it('does not keep a page of more than 1,000 plants', () => {
    const cache = new PageCache();
    cache.get(1, 'a', null, 0);
    assert.equal(cache.set(1, 'a', null, 1_001, page(...Array.from({ length: 1_001 }, (_, i) => `p${i}`))), false);
    assert.equal(cache.get(1, 'a', null, 1_001), undefined);
  });
});
