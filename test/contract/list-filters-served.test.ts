import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { PlantFilterKey } from '../../src/storage/plant-query.js';
import { ENGINES } from '../helpers/engines.js';
import { allPages, call, nextLink, postBatch } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';

/**
 * Every filter of GET /plants, alone and beside each other one, gives exactly the plants it names
 * on each engine, paged and whole, before and after the same pages were cached unfiltered. A filter
 * added to storage/plant-query.ts must be given here (the type below does not compile without
 * it); one that an engine's SQL, a fast path made for another filter, the page cache's key or the
 * cursor's digest leaves out then fails here (the digest: a cursor sent without one of its filters
 * must be refused, else it pages on through plants that filter would have dropped).
 */

interface Sample {
  name: string;
  tag?: string;
}

/** Each filter: its query parameters, and which plants it keeps (the model the server is held to). */
const FILTERS: { [K in PlantFilterKey]-?: { query: string; keeps: (plant: Sample) => boolean } } = {
  tags: { query: 'tag=aroid&tag=fern', keeps: (plant) => plant.tag === 'aroid' || plant.tag === 'fern' },
  text: { query: 'q=FER', keeps: (plant) => plant.name.toLowerCase().includes('fer') },
};

const KEYS = Object.keys(FILTERS) as PlantFilterKey[];

/** Names and tags mixed so that every filter, and every pair, keeps some plants and drops others. */
const PLANTS: Sample[] = Array.from({ length: 36 }, (_, i) => {
  const name = ['Fern', 'Monstera', 'Aloe', 'Ferocactus'][i % 4]! + ` ${String(i).padStart(2, '0')}`;
  const tag = [undefined, 'aroid', 'fern', 'succulent', 'aroid', undefined][i % 6];
  return tag === undefined ? { name } : { name, tag };
});

/** Each filter alone, and each pair. */
const COMBINATIONS: PlantFilterKey[][] = [
  ...KEYS.map((key) => [key]),
  ...KEYS.flatMap((a, i) => KEYS.slice(i + 1).map((b) => [a, b])),
];

const ORDERS: Array<{ sort: string; compare: (a: Sample & { id: number }, b: Sample & { id: number }) => number }> = [
  { sort: 'id', compare: (a, b) => a.id - b.id },
  { sort: '-name', compare: (a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : b.id - a.id) },
];

for (const engine of ENGINES) {
  describe(
    `each filter gives exactly its plants, alone and with every other, cached or not (${engine.name})`,
    {
      skip: engine.skip,
    },
    () => {
      const s = realServer(engine);
      const stored = PLANTS.map((plant, i) => ({ ...plant, id: i + 1 }));

      before(async () => {
        const reply = await postBatch(s.url, s.token, stored);
        assert.equal(reply.status, 200, `the batch answered ${reply.status}: ${reply.text}`);
      });

      it('every filter keeps some plants and drops others, so that a filter left out shows', () => {
        for (const key of KEYS) {
          const kept = PLANTS.filter(FILTERS[key].keeps).length;
          assert.ok(kept > 0 && kept < PLANTS.length, `${key} keeps ${kept} of ${PLANTS.length}`);
        }
      });

      for (const { sort, compare } of ORDERS) {
        for (const keys of COMBINATIONS) {
          const query = keys.map((key) => FILTERS[key].query).join('&');
          it(`?${query}&sort=${sort}: whole, then by pages of 4 after the unfiltered pages were read; its cursor refused without a filter`, async () => {
            const expected = stored
              .filter((plant) => keys.every((key) => FILTERS[key].keeps(plant)))
              .sort(compare)
              .map((plant) => plant.name);
            // The unfiltered pages first, twice, so that any cache holds them when the filtered ones are asked.
            for (let round = 0; round < 2; round++) {
              await allPages(s.token, `${s.url}/plants?sort=${sort}&limit=4`);
            }
            const whole = await call(`${s.url}/plants?${query}&sort=${sort}`, { token: s.token });
            assert.equal(whole.status, 200, whole.text);
            assert.deepEqual(
              (whole.json as Sample[]).map((plant) => plant.name),
              expected,
              'the streamed listing holds exactly the plants the filters keep',
            );
            for (let round = 0; round < 2; round++) {
              const paged = await allPages(s.token, `${s.url}/plants?${query}&sort=${sort}&limit=4`);
              assert.deepEqual(paged.names, expected, `round ${round + 1}: the pages hold exactly those plants`);
            }
            const next = nextLink(await call(`${s.url}/plants?${query}&sort=${sort}&limit=4`, { token: s.token }));
            // Fewer than a page of plants leaves no cursor to try; each filter alone leaves one.
            if (keys.length === 1) assert.notEqual(next, null, 'a single filter keeps more than a page');
            if (next === null) return;
            for (const key of keys) {
              const without = new URL(next);
              for (const param of new URLSearchParams(FILTERS[key].query).keys()) without.searchParams.delete(param);
              const reply = await call(without.href, { token: s.token });
              assert.equal(reply.status, 400, `the cursor without ${key} answered ${reply.status}: ${reply.text}`);
            }
          });
        }
      }
    },
  );
}
