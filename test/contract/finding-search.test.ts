import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { allPages, listPlants, postBatch } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** Names in several scripts, with the characters a search must take literally. */
const NAMES = [
  'ΣΊΣ',
  'σίς',
  'ΣΊΣΥΦΟΣ',
  'Жасмин',
  'жасмин',
  'Émile',
  'émile',
  'emile',
  'İstanbul',
  'istanbul',
  'Straße',
  'STRASSE',
  '🌵 Cactus',
  '𐐀BC', // U+10400 DESERET CAPITAL LONG I: folds to U+10428
  '100% pure',
  'a_b',
  'star*',
  'back\\slash',
];

for (const engine of ENGINES) {
  describe(`GET /plants?q= and ?tag= (${engine.name})`, () => {
    const s = realServer(engine);
    let token = '';
    before(async () => {
      token = (await createToken(s.database, `search-${engine.name}`)).token;
      const plants = NAMES.map((name, i) => ({ id: i + 1, name, tag: i % 3 === 0 ? 'odd' : i % 3 === 1 ? '' : 'Odd' }));
      plants.push({ id: 100, name: 'untagged' } as (typeof plants)[number]);
      assert.equal((await postBatch(s.url, token, plants)).status, 200);
    });

    async function names(query: string): Promise<string[]> {
      const reply = await listPlants(s.url, token, query);
      assert.equal(reply.status, 200, reply.text);
      return (reply.json as Array<{ name: string }>).map((p) => p.name);
    }
    const q = (text: string) => names(`?q=${encodeURIComponent(text)}`);

    describe('q matches names that contain it under simple case folding', () => {
      it('Greek: ΣΊΣ, σίς and ΣΊΣΥΦΟΣ fold to the same letters (both sigmas)', async () => {
        assert.deepEqual(await q('σίς'), ['ΣΊΣ', 'σίς', 'ΣΊΣΥΦΟΣ']);
        assert.deepEqual(await q('ΣΊΣ'), ['ΣΊΣ', 'σίς', 'ΣΊΣΥΦΟΣ']);
        assert.deepEqual(await q('σισυφος'), [], 'no accent is removed: ι is not ί');
        assert.deepEqual(await q('σίσυφος'), ['ΣΊΣΥΦΟΣ']);
      });
      it('Cyrillic and accented Latin, with no accent removed', async () => {
        assert.deepEqual(await q('ЖАС'), ['Жасмин', 'жасмин']);
        assert.deepEqual(await q('ÉMI'), ['Émile', 'émile']);
        assert.deepEqual(await q('EMILE'), ['emile']);
      });
      it('İ and ß stay as they are (no Turkic, no full folding)', async () => {
        assert.deepEqual(await q('istanbul'), ['istanbul']);
        assert.deepEqual(await q('İ'), ['İstanbul']);
        assert.deepEqual(await q('ß'), ['Straße']);
        assert.deepEqual(await q('strasse'), ['STRASSE']);
      });
      it('emoji and characters above U+FFFF', async () => {
        assert.deepEqual(await q('🌵 cACTUS'), ['🌵 Cactus']);
        assert.deepEqual(await q('𐐨bc'), ['𐐀BC'], 'U+10428 matches U+10400 folded');
      });
      it('%, _, * and \\ are plain characters, never wildcards', async () => {
        assert.deepEqual(await q('%'), ['100% pure']);
        assert.deepEqual(await q('0% P'), ['100% pure']);
        assert.deepEqual(await q('_'), ['a_b']);
        assert.deepEqual(await q('*'), ['star*']);
        assert.deepEqual(await q('\\'), ['back\\slash']);
        assert.deepEqual(await q('k\\s'), ['back\\slash']);
        assert.deepEqual(await q('"'), []);
      });
    });

    describe('tag equals one of the values exactly; plants without a tag never match', () => {
      it('case matters', async () => {
        assert.equal((await names('?tag=odd')).length, 6);
        assert.deepEqual(
          await names('?tag=Odd'),
          NAMES.filter((_, i) => i % 3 === 2),
        );
      });
      it('the empty value matches the empty tag only', async () => {
        assert.deepEqual(
          await names('?tag='),
          NAMES.filter((_, i) => i % 3 === 1),
        );
      });
      it('repeated, a plant matches any of them; with q, both hold', async () => {
        assert.equal((await names('?tag=odd&tag=Odd')).length, 12);
        assert.equal((await names('?tag=odd&tag=Odd&tag=')).length, NAMES.length);
        assert.deepEqual(await names('?tag=Odd&q=%CE%A3'), ['ΣΊΣΥΦΟΣ']);
        assert.deepEqual(await names(`?${'tag=x&'.repeat(15)}tag=odd&q=istanbul`), ['istanbul']);
      });
    });

    describe('the next link repeats the filters exactly', () => {
      it('a q with a space, a plus, & and # pages through its matches', async () => {
        const other = (await createToken(s.database, `search-link-${engine.name}`)).token;
        const names = ['x + y & #1', 'X + Y & #2', 'x+y & #3', 'X + Y & #4'];
        await postBatch(
          s.url,
          other,
          names.map((name, i) => ({ id: i, name })),
        );
        const { names: seen, pages } = await allPages(
          other,
          `${s.url}/plants?limit=1&q=${encodeURIComponent('x + y & #')}`,
        );
        assert.deepEqual(seen, ['x + y & #1', 'X + Y & #2', 'X + Y & #4']);
        assert.equal(pages, 3);
      });
    });

    describe('bad values are 400 naming the parameter', () => {
      const refusals: Array<[string, string, RegExp]> = [
        ['empty q', '?q=', /^q /],
        ['q over 256 characters', `?q=${'é'.repeat(257)}`, /^q /],
        ['q with U+0000', '?q=a%00b', /^q /],
        ['q twice', '?q=a&q=b', /^q /],
        ['17 tags', `?${'tag=a&'.repeat(17)}`, /^tag /],
        ['a tag over 256 characters', `?tag=${'t'.repeat(257)}`, /^tag /],
        ['a tag with U+0000', '?tag=%00', /^tag /],
        ['an unknown sort', '?sort=size', /^sort /],
        ['an empty sort', '?sort=', /^sort /],
        ['sort twice', '?sort=id&sort=name', /^sort /],
      ];
      for (const [what, query, names] of refusals) {
        it(`refuses ${what}`, async () => {
          const reply = await listPlants(s.url, token, query);
          assert.equal(reply.status, 400);
          assert.ok(isErrorBody(reply), reply.text);
          assert.match((reply.json as { message: string }).message, names);
        });
      }
      it('accepts 16 tags and a q of exactly 256 characters (emoji count as one)', async () => {
        const tags = ['odd', ...Array.from({ length: 15 }, (_, i) => `t${i}`)];
        assert.deepEqual(
          await names(`?${tags.map((tag) => `tag=${tag}`).join('&')}`),
          NAMES.filter((_, i) => i % 3 === 0),
        );
        // Answered, and filtered: no name holds 256 cacti.
        assert.deepEqual(await q('🌵'.repeat(256)), []);
      });
    });
  });
}
