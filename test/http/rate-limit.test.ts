import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { localWindows } from '../../src/http/rate-windows.js';
import { ENGINES, sqlite } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('too many requests for one account is 429 with Retry-After', () => {
  const s = realServer(sqlite, ['--rate-limit', '5']);

  it('answers 429 past the per-second limit, with Retry-After and RateLimit headers', async () => {
    // Eight at once are five answered and three refused when they share one window; a window that
    // ends in the middle of the burst lets more through, so a few bursts are allowed.
    let replies: Awaited<ReturnType<typeof listPlants>>[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const { token } = await createToken(s.database, `busy-${attempt}`);
      replies = await Promise.all(Array.from({ length: 8 }, () => listPlants(s.url, token)));
      if (replies.filter((r) => r.status === 200).length === 5) break;
    }
    const statuses = replies.map((r) => r.status);
    assert.equal(statuses.filter((status) => status === 200).length, 5, statuses.join(','));
    assert.equal(statuses.filter((status) => status === 429).length, 3, statuses.join(','));
    const reply = replies.find((r) => r.status === 429)!;
    assert.ok(isErrorBody(reply), reply.text);
    assert.match((reply.json as { message: string }).message, /limit is 5 per second/);
    assert.match(reply.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    assert.equal(reply.headers.get('ratelimit-limit'), '5');
    assert.equal(reply.headers.get('ratelimit-remaining'), '0');
  });

  it('counts each account on its own', async () => {
    const a = (await createToken(s.database, 'a-account')).token;
    const b = (await createToken(s.database, 'b-account')).token;
    const burst = await Promise.all(Array.from({ length: 8 }, () => listPlants(s.url, a)));
    assert.ok(
      burst.some((r) => r.status === 429),
      `a is limited: ${burst.map((r) => r.status)}`,
    );
    const other = await listPlants(s.url, b);
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('ratelimit-remaining'), '4', "b's first request, whatever a spent");
  });

  it('lets the account in again after the window', async () => {
    const { token } = await createToken(s.database, 'patient');
    const burst = await Promise.all(Array.from({ length: 8 }, () => listPlants(s.url, token)));
    const refused = burst.find((r) => r.status === 429);
    assert.ok(refused, `the burst is limited: ${burst.map((r) => r.status)}`);
    await sleep(Number(refused.headers.get('retry-after')) * 1_000 + 100);
    const again = await listPlants(s.url, token);
    assert.equal(again.status, 200);
    assert.equal(again.headers.get('ratelimit-remaining'), '4', 'a new window, with the whole budget');
  });
});

for (const engine of ENGINES) {
  describe(`a new second lets the first requests of a burst through (${engine.name})`, () => {
    const s = realServer(engine, ['--rate-limit', '2']);

    it('answers exactly two of thirty at once with 200, a second after the previous request', async () => {
      // Several rounds: the burst once met the previous second's count when token lookups (on
      // PostgreSQL) finished together, and then all thirty were refused.
      for (let round = 0; round < 6; round++) {
        const { token } = await createToken(s.database, `burst-${round}`);
        assert.equal((await listPlants(s.url, token)).status, 200);
        await sleep(1_150);
        const replies = await Promise.all(Array.from({ length: 30 }, () => listPlants(s.url, token)));
        const statuses = replies.map((r) => r.status);
        assert.equal(statuses.filter((status) => status === 200).length, 2, `round ${round}: ${statuses.join(',')}`);
        assert.equal(statuses.filter((status) => status === 429).length, 28);
      }
    });
  });
}

describe('one budget per account for every limited operation', () => {
  const s = realServer(sqlite, ['--rate-limit', '3']);

  it('counts lists, creates and HEAD requests of one account together, each once', async () => {
    const { token } = await createToken(s.database, 'mixed');
    // Three requests in a row, each showing what is left of the account's budget: 2, 1, 0. A new
    // window may open between two of them, so a few tries are allowed.
    let remaining: string[] = [];
    for (let attempt = 0; attempt < 3 && remaining.join() !== '2,1,0'; attempt++) {
      await sleep(1_100);
      const list = await listPlants(s.url, token);
      const create = await postPlant(s.url, token, { id: attempt, name: `p${attempt}` });
      const head = await call(`${s.url}/plants`, { method: 'HEAD', token });
      remaining = [list, create, head].map((r) => r.headers.get('ratelimit-remaining') ?? '');
    }
    assert.deepEqual(remaining, ['2', '1', '0']);
  });

  it('gives each request counted in one turn its own count', () => {
    const windows = localWindows(1_000);
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) windows.count('account:same', (_error, counted) => counts.push(counted!.count));
    assert.deepEqual(counts, [1, 2, 3, 4, 5]);
  });
});

describe('--rate-limit 0 turns the limit off', () => {
  let store: Awaited<ReturnType<typeof sqlite.fresh>>;
  let server: RunningServer;
  before(async () => {
    store = await sqlite.fresh();
    // RATE_LIMIT=2 in the environment, so the flag is what turns it off (flags win).
    server = await startServer({ database: store.url, args: ['--rate-limit', '0'], env: { RATE_LIMIT: '2' } });
  });
  after(async () => {
    await server.stop();
    await store.drop();
  });

  it('never answers 429, and counts nothing', async () => {
    const replies = await Promise.all(Array.from({ length: 50 }, () => listPlants(server.url, server.firstToken!)));
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
    for (const reply of replies) assert.equal(reply.headers.get('ratelimit-limit'), null);
  });
});

describe('with REDIS_URL the limit is shared by every instance', () => {
  let store: Awaited<ReturnType<typeof sqlite.fresh>>;
  let servers: RunningServer[] = [];
  before(async () => {
    store = await sqlite.fresh();
    const args = ['--rate-limit', '20', '--redis-url', REDIS_URL];
    servers = [await startServer({ database: store.url, args }), await startServer({ database: store.url, args })];
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await store.drop();
  });

  it('limits the account across two instances to one budget', async () => {
    const { token } = await createToken(store.url, `shared-${randomBytes(4).toString('hex')}`);
    // Thirty requests at once, fifteen through each instance: alone, neither would pass 20.
    let statuses: number[] = [];
    for (let attempt = 0; attempt < 3 && !statuses.includes(429); attempt++) {
      if (attempt > 0) await sleep(1_100);
      const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => listPlants(servers[i % 2]!.url, token)));
      statuses = replies.map((r) => r.status);
    }
    assert.ok(statuses.includes(429), `statuses: ${statuses.join(',')}`);
    assert.ok(statuses.filter((s) => s === 200).length <= 20);
  });
});

describe('an unreachable Redis is one JSON warning, not a stack per reconnection attempt', () => {
  it('lets requests through at once and logs the outage once', async () => {
    const store = await sqlite.fresh();
    // Port 1: nothing listens, so every reconnection attempt fails.
    const server = await startServer({
      database: store.url,
      args: ['--rate-limit', '5', '--redis-url', 'redis://127.0.0.1:1'],
    });
    try {
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        assert.equal((await listPlants(server.url, server.firstToken!)).status, 200);
        assert.ok(Date.now() - started < 1_000, 'not held by the Redis client');
      }
      await sleep(3_000); // ioredis retries every fraction of a second to 2 s
      const redisLines = server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('Redis'));
      assert.equal(redisLines.length, 1, server.stdout());
      assert.match(redisLines[0]!, /"level":40.*"reason":"connect ECONNREFUSED[^"]*".*Redis is unreachable/);
      assert.doesNotMatch(server.stderr(), /ioredis|Error/);
    } finally {
      await server.stop();
      await store.drop();
    }
  });

  it('says once that Redis is reachable', async () => {
    const store = await sqlite.fresh();
    const server = await startServer({ database: store.url, args: ['--rate-limit', '5', '--redis-url', REDIS_URL] });
    try {
      assert.equal((await listPlants(server.url, server.firstToken!)).status, 200);
      await sleep(500);
      const redisLines = server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('Redis'));
      assert.equal(redisLines.length, 1, server.stdout());
      assert.match(redisLines[0]!, /"level":30.*Redis is reachable/);
    } finally {
      await server.stop();
      await store.drop();
    }
  });
});
