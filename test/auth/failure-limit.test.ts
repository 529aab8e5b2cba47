import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashSecret, newToken } from '../../src/auth/api-tokens.js';
import { FailureLimit, clientOf } from '../../src/auth/failure-limit.js';
import { SCOPES } from '../../src/auth/scopes.js';
import { openStorage } from '../../src/storage/open.js';
import { ENGINES, sqlite } from '../helpers/engines.js';
import { call, listPlants, metric } from '../helpers/http.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

const madeUp = () => `pst_${randomBytes(32).toString('base64url')}`;

/** One request from `address` (the server trusts X-Forwarded-For), with `token` when given. */
function from(url: string, address: string, token?: string) {
  return call(`${url}/plants`, { headers: { 'x-forwarded-for': address }, ...(token ? { token } : {}) });
}

for (const engine of ENGINES) {
  describe(`--auth-failure-limit: beyond N failed authentications a minute from one address, 429 (${engine.name})`, () => {
    const s = realServer(engine, ['--auth-failure-limit', '5', '--trust-proxy', 'true']);
    let known = '';
    before(async () => {
      known = (await createToken(s.database, 'behind-the-nat')).token;
    });

    it('answers the first N failures 401 and the next 429 with Retry-After and the Error body', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await from(s.url, '198.51.100.1', madeUp())).status);
      assert.deepEqual(statuses, [401, 401, 401, 401, 401]);
      for (const token of [madeUp(), undefined]) {
        const reply = await from(s.url, '198.51.100.1', token);
        assert.equal(reply.status, 429);
        assert.ok(isErrorBody(reply), reply.text);
        const retryAfter = Number(reply.headers.get('retry-after'));
        assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${retryAfter}`);
      }
      assert.ok((await metric(s.url, 'plant_store_auth_failures_total{reason="too_many_failures"}')) >= 2);
    });

    it('keeps serving a good token it knows from that address, and other addresses', async () => {
      assert.equal((await from(s.url, '198.51.100.2', known)).status, 200);
      for (let i = 0; i < 8; i++) await from(s.url, '198.51.100.2', madeUp());
      assert.equal((await from(s.url, '198.51.100.2', madeUp())).status, 429);
      // Past the 500 ms for which a lookup is trusted: the known token is looked up again and passes.
      await sleep(600);
      assert.equal((await from(s.url, '198.51.100.2', known)).status, 200);
      assert.equal((await from(s.url, '198.51.100.3', madeUp())).status, 401);
    });

    it('does not look unknown tokens up in the store for an address over its limit', async () => {
      for (let i = 0; i < 6; i++) await from(s.url, '198.51.100.4', madeUp());
      const before = await metric(s.url, 'plant_store_token_lookups_total{found="false"}');
      const replies = await Promise.all(Array.from({ length: 20 }, () => from(s.url, '198.51.100.4', madeUp())));
      assert.deepEqual([...new Set(replies.map((r) => r.status))], [429]);
      assert.equal(await metric(s.url, 'plant_store_token_lookups_total{found="false"}'), before);
    });

    it('counts an IPv6 client by its /64', async () => {
      for (let i = 0; i < 6; i++) await from(s.url, `2001:db8:0:7::${i + 1}`, madeUp());
      assert.equal((await from(s.url, '2001:db8:0:7::ffff', madeUp())).status, 429);
      assert.equal((await from(s.url, '2001:db8:0:8::1', madeUp())).status, 401);
    });
  });
}

describe('the failure limit counts in windows of a minute per client', () => {
  it('lets a client fail again once its window has ended', async () => {
    const limit = new FailureLimit(2, 200);
    assert.equal(limit.fail('192.0.2.1'), undefined);
    assert.equal(limit.fail('192.0.2.1'), undefined);
    assert.equal(limit.isOver('192.0.2.1'), true);
    assert.equal(limit.fail('192.0.2.1')?.statusCode, 429);
    assert.equal(limit.isOver('192.0.2.2'), false);
    await sleep(250);
    assert.equal(limit.isOver('192.0.2.1'), false);
    assert.equal(limit.fail('192.0.2.1'), undefined);
  });

  it('names IPv4 (also IPv4-mapped) clients by address and IPv6 clients by /64', () => {
    assert.equal(clientOf('192.0.2.1'), '192.0.2.1');
    assert.equal(clientOf('::ffff:192.0.2.1'), '192.0.2.1');
    assert.equal(clientOf('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientOf('2001:db8:0:0:aaaa::1'), '2001:db8:0:0::/64');
  });
});

describe('--auth-failure-limit 0 turns the limit off', () => {
  let store: Awaited<ReturnType<typeof sqlite.fresh>>;
  let server: RunningServer;
  before(async () => {
    store = await sqlite.fresh();
    // AUTH_FAILURE_LIMIT=5 in the environment, so the flag is what turns it off (flags win).
    server = await startServer({
      database: store.url,
      args: ['--auth-failure-limit', '0'],
      env: { AUTH_FAILURE_LIMIT: '5' },
    });
  });
  after(async () => {
    await server.stop();
    await store.drop();
  });

  it('answers every failure 401', async () => {
    const replies = await Promise.all(Array.from({ length: 80 }, () => listPlants(server.url, madeUp())));
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [401]);
  });
});

describe('unknown tokens are remembered for 500 ms: a flood of one token barely reaches the store', () => {
  const s = realServer(sqlite, ['--auth-failure-limit', '0']);
  it('looks one unknown token up at most a few times for a hundred requests', async () => {
    const token = madeUp();
    const before = await metric(s.url, 'plant_store_token_lookups_total{found="false"}');
    const started = Date.now();
    for (let round = 0; round < 4; round++) {
      const replies = await Promise.all(Array.from({ length: 25 }, () => listPlants(s.url, token)));
      assert.deepEqual([...new Set(replies.map((r) => r.status))], [401]);
    }
    const lookups = (await metric(s.url, 'plant_store_token_lookups_total{found="false"}')) - before;
    // Concurrent requests share a lookup, and a lookup is trusted for 500 ms.
    const windows = Math.ceil((Date.now() - started) / 500) + 1;
    assert.ok(lookups >= 1 && lookups <= windows, `${lookups} lookups in ${Date.now() - started} ms`);
  });

  it('accepts a token within 1 second of its creation, though its hash was just remembered as unknown', async () => {
    const secret = madeUp();
    assert.equal((await listPlants(s.url, secret)).status, 401);
    const storage = await openStorage(s.database);
    try {
      const token = newToken('late', SCOPES, null).token;
      await storage.createToken({ ...token, secretHash: hashSecret(secret) });
    } finally {
      await storage.close();
    }
    await sleep(1_000);
    assert.equal((await listPlants(s.url, secret)).status, 200);
  });
});
