import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { ENGINES_AND_POOLER, sqlite } from '../helpers/engines.js';
import { call, listPlants, nextLink, postPlant } from '../helpers/http.js';
import { rawExchange } from '../helpers/raw-http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

for (const engine of ENGINES_AND_POOLER) {
  describe(`GET /plants (${engine.name})`, { skip: engine.skip }, () => {
    const s = realServer(engine);

    async function accountWith(name: string, ids: Array<number | string>): Promise<string> {
      const token = (await createToken(s.database, `${name}-${engine.name}`)).token;
      await Promise.all(ids.map((id) => postPlant(s.url, token, `{"id": ${id}, "name": "p${id}"}`)));
      return token;
    }

    describe('success is 200 with a JSON array of Plant', () => {
      it('answers [] for an account with no plants', async () => {
        const token = (await createToken(s.database, `empty-${engine.name}`)).token;
        const reply = await listPlants(s.url, token);
        assert.equal(reply.status, 200);
        assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
        assert.deepEqual(reply.json, []);
      });
      it('never shows id, and omits an absent tag', async () => {
        const token = (await createToken(s.database, `shape-${engine.name}`)).token;
        await postPlant(s.url, token, { id: 2, name: 'b', tag: 't' });
        await postPlant(s.url, token, { id: 1, name: 'a' });
        assert.equal((await listPlants(s.url, token)).text, '[{"name":"a"},{"name":"b","tag":"t"}]');
      });
    });

    describe('order is ascending id, numeric over the whole int64 range', () => {
      it('sorts negatives, small and huge ids numerically, not as text', async () => {
        const ids = ['10', '9', '-5', '100', '9223372036854775807', '-9223372036854775808', '9007199254740993', '2'];
        const token = await accountWith('order', ids);
        const names = ((await listPlants(s.url, token)).json as Array<{ name: string }>).map((p) => p.name);
        const sorted = [...ids].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1)).map((id) => `p${id}`);
        assert.deepEqual(names, sorted);
      });
    });

    describe('limit is an int32 from 0 to 2147483647; anything else is 400', () => {
      for (const bad of ['-1', '1.5', 'abc', '', '2147483648', '1e3', ' 1', '0x10', '99999999999999999999']) {
        it(`refuses limit=${JSON.stringify(bad)}`, async () => {
          const reply = await listPlants(s.url, s.token, `?limit=${encodeURIComponent(bad)}`);
          assert.equal(reply.status, 400);
          assert.ok(isErrorBody(reply));
          assert.match((reply.json as { message: string }).message, /limit/);
        });
      }
      for (const [what, query] of [
        ['a repeated limit', '?limit=1&limit=2'],
        ['a bare ?limit', '?limit'],
      ]) {
        it(`refuses ${what}`, async () => {
          const reply = await listPlants(s.url, s.token, query);
          assert.equal(reply.status, 400);
          assert.ok(isErrorBody(reply), reply.text);
          assert.match((reply.json as { message: string }).message, /\blimit\b/);
        });
      }
      it('accepts 0 (an empty page) and 2147483647 (everything)', async () => {
        const token = await accountWith('limits', [1, 2, 3]);
        const zero = await listPlants(s.url, token, '?limit=0');
        assert.equal(zero.status, 200);
        assert.deepEqual(zero.json, []);
        const max = await listPlants(s.url, token, '?limit=2147483647');
        assert.equal(max.status, 200);
        assert.deepEqual(max.json, [{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }]);
        assert.equal(max.headers.get('link'), null);
      });
      it('refuses a cursor that was not issued by the server', async () => {
        const reply = await listPlants(s.url, s.token, '?limit=2&cursor=not-a-cursor');
        assert.equal(reply.status, 400);
        assert.ok(isErrorBody(reply), reply.text);
        assert.match((reply.json as { message: string }).message, /^cursor /);
      });
    });

    describe('a cursor the server did not make is a 400 naming cursor, with or without limit', () => {
      /**
       * The cursor's digest is not keyed (plants/cursor.ts), so anyone can make one that passes it:
       * what it holds must then be checked in full. These are cursors of an unfiltered listing.
       */
      function forged(sort: string, position: string): string {
        const body = Buffer.from(position).toString('base64url');
        const canonical = JSON.stringify([sort, null, null, body]);
        return `${body}.${createHash('sha256').update(canonical).digest().subarray(0, 12).toString('base64url')}`;
      }
      const cursors: Array<[string, string]> = [
        // The two of the report, as they were sent.
        ['', 'WyI5MjIzMzcyMDM2ODU0Nzc1ODA4Il0.MDcX_O05-wiYwglN'],
        ['&sort=name', 'WyIxIix0cnVlXQ.oCs5BsH4cHFUj5zM'],
        ['', forged('id', '["-9223372036854775809"]')],
        ['', forged('id', '["99999999999999999999999999"]')],
        ['', forged('id', '[1]')],
        ['', forged('id', '["01"]')],
        ['', forged('id', '["1e3"]')],
        ['', forged('id', '["-0"]')],
        ['', forged('id', '["1","a"]')],
        ['', forged('id', '{"id":"1"}')],
        ['', forged('id', '"1"')],
        ['', forged('id', '[')],
        ['&sort=name', forged('name', '["1"]')],
        ['&sort=name', forged('name', '["1",""]')],
        ['&sort=-name', forged('-name', '["1",null]')],
        ['&sort=name', forged('name', `["1","${'x'.repeat(257)}"]`)],
        ['&sort=name', forged('name', '["1","a\\u0000"]')],
        ['&sort=name', forged('name', '["1","\\ud800"]')],
      ];
      it('refuses each made-up position, and logs no error', async () => {
        await postPlant(s.url, s.token, { id: 1, name: 'a' });
        for (const [sort, cursor] of cursors) {
          for (const limit of ['&limit=2', '']) {
            const query = `?cursor=${cursor}${sort}${limit}`;
            const reply = await listPlants(s.url, s.token, query);
            assert.equal(reply.status, 400, `${query}: ${reply.text}`);
            assert.ok(isErrorBody(reply), `${query}: ${reply.text}`);
            assert.match((reply.json as { message: string }).message, /^cursor /, query);
          }
        }
        const errors = s
          .server!.stdout()
          .split('\n')
          .filter((line) => line.includes('"level":50'));
        assert.deepEqual(errors, []);
      });
      it('still accepts a position it could have made', async () => {
        const reply = await listPlants(s.url, s.token, `?limit=2&sort=name&cursor=${forged('name', '["0","a"]')}`);
        assert.equal(reply.status, 200, reply.text);
      });
    });

    describe('paging: rel="next" links visit every plant exactly once, in order', () => {
      it('follows next links to the end and sees each plant once', async () => {
        const ids = Array.from({ length: 53 }, (_, i) => ((i * 7919) % 1000) - 500);
        const token = await accountWith('paging', ids);
        const seen: string[] = [];
        let url: string | null = `${s.url}/plants?limit=10`;
        let pages = 0;
        while (url) {
          const reply = await call(url, { token });
          assert.equal(reply.status, 200);
          const page = reply.json as Array<{ name: string }>;
          assert.ok(page.length <= 10);
          seen.push(...page.map((p) => p.name));
          url = nextLink(reply);
          pages++;
        }
        const expected = [...new Set(ids)].sort((a, b) => a - b).map((id) => `p${id}`);
        assert.deepEqual(seen, expected);
        assert.equal(pages, Math.ceil(expected.length / 10));
      });
      it('gives no Link when the page holds the last plant', async () => {
        const token = await accountWith('lastpage', [1, 2]);
        assert.ok(nextLink(await listPlants(s.url, token, '?limit=1')), 'a page before the last has one');
        const reply = await listPlants(s.url, token, '?limit=2');
        assert.equal(reply.status, 200);
        assert.deepEqual(reply.json, [{ name: 'p1' }, { name: 'p2' }]);
        assert.equal(reply.headers.get('link'), null);
      });
      it("does not let one account's cursor reveal another's plants", async () => {
        const a = await accountWith('cursor-a', [1, 2, 3]);
        const b = await accountWith('cursor-b', [1, 2, 3, 4]);
        const next = nextLink(await listPlants(s.url, a, '?limit=1'))!;
        const replyB = await call(next, { token: b });
        assert.deepEqual(replyB.json, [{ name: 'p2' }]);
        assert.ok(nextLink(replyB), 'b still has plants after 2');
      });
    });

    describe('without limit, every plant of the caller is returned (streamed)', () => {
      it('returns all 2,500 plants of an account', async () => {
        const token = (await createToken(s.database, `many-${engine.name}`)).token;
        for (let start = 0; start < 2500; start += 250) {
          await Promise.all(
            Array.from({ length: 250 }, (_, i) => postPlant(s.url, token, { id: start + i, name: `n${start + i}` })),
          );
        }
        const plants = (await listPlants(s.url, token)).json as Array<{ name: string }>;
        assert.equal(plants.length, 2500);
        assert.deepEqual(plants.slice(0, 3), [{ name: 'n0' }, { name: 'n1' }, { name: 'n2' }]);
        assert.deepEqual(plants.at(-1), { name: 'n2499' });
      });
    });

    describe('an account sees only its own plants', () => {
      it('keeps two accounts apart, even sharing ids', async () => {
        const a = await accountWith('iso-a', [1, 2, 3]);
        const b = (await createToken(s.database, `iso-b-${engine.name}`)).token;
        await postPlant(s.url, b, { id: 2, name: 'only-b' });
        assert.deepEqual((await listPlants(s.url, b)).json, [{ name: 'only-b' }]);
        assert.deepEqual((await listPlants(s.url, a)).json, [{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }]);
        assert.deepEqual((await listPlants(s.url, b, '?limit=10')).json, [{ name: 'only-b' }]);
      });
      it('lets tokens of one account share its plants', async () => {
        const first = (await createToken(s.database, `shared-${engine.name}`)).token;
        const second = (await createToken(s.database, `shared-${engine.name}`)).token;
        await postPlant(s.url, first, { id: 1, name: 'shared' });
        assert.deepEqual((await listPlants(s.url, second)).json, [{ name: 'shared' }]);
      });
    });
  });
}

describe('next links are relative to the request URL: no header goes into them, and a Host that is not a host is refused', () => {
  // Behind a proxy that is trusted, X-Forwarded-* would be believed: it is the case to show.
  const s = realServer(sqlite, ['--trust-proxy', 'true']);
  const BREAKOUT = 'evil.example/x>; rel="preload", <http://a';
  const port = () => Number(new URL(s.url).port);
  const get = (host: string, more = '') =>
    rawExchange(
      port(),
      `GET /plants?limit=1&sort=name HTTP/1.1\r\nHost: ${host}\r\n${more}Authorization: Bearer ${s.token}\r\nConnection: close\r\n\r\n`,
    );

  it('sends </plants?...&cursor=...>; rel="next", whatever Host and X-Forwarded-* say', async () => {
    await postPlant(s.url, s.token, { id: 1, name: 'a' });
    await postPlant(s.url, s.token, { id: 2, name: 'b' });
    for (const host of ['shop.example', '127.0.0.1:8080', '[::1]:80']) {
      const { responses } = await get(host, `X-Forwarded-Proto: https\r\nX-Forwarded-Host: ${BREAKOUT}\r\n`);
      assert.equal(responses[0]?.status, 200, host);
      assert.match(
        responses[0]!.headers.link ?? '',
        /^<\/plants\?limit=1&sort=name&cursor=[\w.-]+>; rel="next"$/,
        host,
      );
    }
    // Resolved against the request's URL, it is the next page.
    const next = nextLink(await listPlants(s.url, s.token, '?limit=1'))!;
    assert.deepEqual((await call(next, { token: s.token })).json, [{ name: 'b' }]);
  });
  it('answers 400 with the Error body to a Host that is not a host name or address, or to two Hosts', async () => {
    for (const [host, more] of [
      [BREAKOUT, ''],
      ['a b', ''],
      ['shop.example:port', ''],
      ['shop.example', 'Host: other.example\r\n'],
    ]) {
      const { responses } = await get(host!, more);
      assert.equal(responses[0]?.status, 400, host);
      assert.equal(responses[0]!.headers.link, undefined);
      const body = JSON.parse(responses[0]!.body.toString()) as { error: number; message: string };
      assert.equal(body.error, 400);
      assert.match(body.message, /^the Host header /);
    }
  });
});
