import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { redisOutageLog } from '../../src/http/rate-limit.js';
import { sqlite } from '../helpers/engines.js';
import { listPlants, metric } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';

/**
 * The contract's "Redis (the shared rate limit) stopping, refusing, or not answering at all"
 * (docs/operating.md, "When a dependency fails"), made for real: a redis-server this file owns,
 * stopped, started again on its port, paused with SIGSTOP (its connections stay open and nothing
 * answers), and absent at start, under two servers that share one limit through it.
 */

const LIMIT = 10;
/** Requests of a burst per server: alone, each server lets LIMIT of them through; shared, both together do. */
const PER_SERVER = 15;
/** The longest a request may wait on Redis (the contract's bound). */
const BOUND_MS = 250;
/**
 * What a loaded two-core machine may add to a request held by a server, beyond the bound and its
 * normal time: the burst's requests all wake at the bound and are then served one after another.
 */
const SLACK_MS = 300;
/** A window and a little more: an account's next burst opens a new window everywhere. */
const NEW_WINDOW_MS = 1_150;

const WARNING = /"level":40.*Redis is unreachable/;
const BACK = /"level":30.*Redis is back/;

interface Burst {
  ok: number;
  limited: number;
  others: number[];
  /** As the clients saw it, queueing in this process and on two busy cores included. */
  p99: number;
  slowest: number;
  /** As the servers logged it (`durationMs`): the time a request was held, Redis's share included. */
  serverP99: number;
  serverSlowest: number;
}

const p99 = (times: number[]) => times.sort((a, b) => a - b)[Math.ceil(times.length * 0.99) - 1]!;

/** The `durationMs` each server logged for these request ids (its log is written every 100 ms). */
async function loggedDurations(servers: RunningServer[], ids: string[]): Promise<number[]> {
  const pattern = /"reqId":"([^"]+)".*"durationMs":([\d.]+)/;
  for (let attempt = 0; ; attempt++) {
    const durations = new Map<string, number>();
    for (const line of servers.flatMap((server) => server.stdout().split('\n'))) {
      const match = pattern.exec(line);
      if (match) durations.set(match[1]!, Number(match[2]));
    }
    if (ids.every((id) => durations.has(id))) return ids.map((id) => durations.get(id)!);
    if (attempt === 50) throw new Error(`request lines missing for ${ids.filter((id) => !durations.has(id))}`);
    await sleep(20);
  }
}

/** PER_SERVER requests at once through each server for one account, each one timed. */
async function burst(servers: RunningServer[], token: string): Promise<Burst> {
  const answers = await Promise.all(
    servers.flatMap((server) =>
      Array.from({ length: PER_SERVER }, async () => {
        const started = performance.now();
        const { status, headers } = await listPlants(server.url, token);
        return { status, ms: performance.now() - started, id: headers.get('x-request-id')! };
      }),
    ),
  );
  const held = await loggedDurations(
    servers,
    answers.map((a) => a.id),
  );
  const times = answers.map((a) => a.ms);
  return {
    ok: answers.filter((a) => a.status === 200).length,
    limited: answers.filter((a) => a.status === 429).length,
    others: answers.map((a) => a.status).filter((status) => status !== 200 && status !== 429),
    p99: p99(times),
    slowest: Math.max(...times),
    serverP99: p99(held),
    serverSlowest: Math.max(...held),
  };
}

const lines = (server: RunningServer, pattern: RegExp) =>
  server
    .stdout()
    .split('\n')
    .filter((line) => pattern.test(line));

/** Milliseconds until every server has logged `pattern` `times` times (measured from `since`). */
async function untilLogged(servers: RunningServer[], pattern: RegExp, since: number, times = 1): Promise<number> {
  const deadline = since + 15_000;
  while (!servers.every((server) => lines(server, pattern).length >= times)) {
    if (performance.now() > deadline) {
      throw new Error(`no ${pattern} within 15 s:\n${servers.map((s) => s.stdout()).join('\n---\n')}`);
    }
    await sleep(10);
  }
  return Math.round(performance.now() - since);
}

const redisErrors = (server: RunningServer) =>
  metric(server.url, 'plant_store_dependency_errors_total{dependency="redis"}');

/**
 * Two servers on one store sharing the limit through `redis`, for the enclosing describe, with the
 * time a burst of theirs normally takes once warm.
 */
function sharingPair(redis: () => TestRedis, { redisFirst = true } = {}) {
  const context = { servers: [] as RunningServer[], token: '', normal: undefined as unknown as Burst };
  let drop = async () => {};
  before(async () => {
    if (redisFirst) await redis().start();
    const store = await sqlite.fresh();
    drop = store.drop;
    const args = ['--rate-limit', String(LIMIT), '--redis-url', redis().url];
    context.servers = await Promise.all([0, 1].map(() => startServer({ database: store.url, args })));
    context.token = (await createToken(store.url, 'busy')).token;
    // The first requests of an account open connections and look its token up: not the normal time.
    await burst(context.servers, context.token);
    await sleep(NEW_WINDOW_MS);
    context.normal = await burst(context.servers, context.token);
    await sleep(NEW_WINDOW_MS);
  });
  after(async () => {
    await Promise.all(context.servers.map((server) => server.stop()));
    await redis().stop();
    await drop();
  });
  return context;
}

/**
 * Every request answered 200 or 429, none held past the bound, and each server counting alone. The
 * bound is the servers' (the time each logged): the clients' times, printed beside it, add this
 * process's and the machine's queueing, which are no promise of the product.
 */
function assertCountedPerProcess(b: Burst, normal: Burst, what: string) {
  assert.deepEqual(b.others, [], `${what}: every request is answered 200 or 429`);
  assert.equal(b.ok, 2 * LIMIT, `${what}: each server lets its own LIMIT through`);
  assert.equal(b.limited, 2 * (PER_SERVER - LIMIT), `${what}: the per-process limit still refuses`);
  assert.ok(
    b.serverSlowest <= normal.serverSlowest + BOUND_MS + SLACK_MS,
    `${what}: held ${b.serverSlowest.toFixed(0)} ms at most, normally ${normal.serverSlowest.toFixed(0)} ms`,
  );
}

function assertShared(b: Burst, what: string) {
  assert.deepEqual(b.others, [], `${what}: every request is answered 200 or 429`);
  assert.equal(b.ok, LIMIT, `${what}: both servers' requests count against one limit`);
}

function report(t: TestContext, what: string, b: Burst) {
  t.diagnostic(
    `${what}: ${b.ok} ok, ${b.limited} 429; held by the server p99 ${b.serverP99.toFixed(0)} ms ` +
      `(slowest ${b.serverSlowest.toFixed(0)}), answered p99 ${b.p99.toFixed(0)} ms (slowest ${b.slowest.toFixed(0)})`,
  );
}

describe('a Redis that stops is passed by, counted per process, and shared again once it restarts', () => {
  let redis: TestRedis;
  before(async () => (redis = await startRedis()));
  const pair = sharingPair(() => redis);

  it('answers every request while Redis is stopped, and shares the limit by itself once it is back', async (t) => {
    const { servers, token, normal } = pair;
    report(t, 'shared, Redis up', normal);
    assertShared(normal, 'before the stop');

    await redis.signal('SIGTERM');
    const stoppedAt = performance.now();
    const noticed = await untilLogged(servers, WARNING, stoppedAt);
    t.diagnostic(`stop noticed (warning logged) in ${noticed} ms`);
    for (let round = 0; round < 3; round++) {
      await sleep(NEW_WINDOW_MS);
      const away = await burst(servers, token);
      report(t, `Redis stopped, round ${round}`, away);
      assertCountedPerProcess(away, normal, `Redis stopped, round ${round}`);
    }
    assert.ok((await redisErrors(servers[0]!)) > 0, 'failed Redis calls are counted in /metrics');

    await redis.start();
    const recovery = await untilLogged(servers, BACK, performance.now());
    t.diagnostic(`shared counting back ${recovery} ms after Redis answered again`);
    assert.ok(recovery < 3_000, `back after ${recovery} ms`);
    await sleep(NEW_WINDOW_MS);
    assertShared(await burst(servers, token), 'after the restart');
    for (const server of servers) assert.equal(lines(server, WARNING).length, 1, server.stdout());
  });
});

describe('a paused Redis (SIGSTOP) holds a request 250 ms at most, and shared counting resumes with SIGCONT', () => {
  let redis: TestRedis;
  before(async () => (redis = await startRedis()));
  const pair = sharingPair(() => redis);

  it('answers every request within the bound while Redis answers nothing, and shares the limit again after', async (t) => {
    const { servers, token, normal } = pair;
    report(t, 'shared, Redis up', normal);
    assertShared(normal, 'before the pause');

    await redis.signal('SIGSTOP');
    try {
      // The first burst meets the frozen connection: each request waits out the bound at most.
      const first = await burst(servers, token);
      report(t, 'first burst on the paused Redis', first);
      assertCountedPerProcess(first, normal, 'first burst on the paused Redis');
      await untilLogged(servers, WARNING, performance.now());
      // Long enough for the frozen connection to be dropped and dialled again (into the paused
      // server's backlog), more than once.
      for (let round = 0; round < 3; round++) {
        await sleep(NEW_WINDOW_MS);
        const away = await burst(servers, token);
        report(t, `Redis paused, round ${round}`, away);
        assertCountedPerProcess(away, normal, `Redis paused, round ${round}`);
        assert.ok(
          away.serverSlowest <= normal.serverSlowest + SLACK_MS,
          `no request waits on Redis once it is known away: held ${away.serverSlowest.toFixed(0)} ms at most`,
        );
      }
      assert.ok((await redisErrors(servers[1]!)) > 0, 'timed-out Redis calls are counted in /metrics');
    } finally {
      await redis.signal('SIGCONT');
    }
    const recovery = await untilLogged(servers, BACK, performance.now());
    t.diagnostic(`shared counting back ${recovery} ms after SIGCONT`);
    assert.ok(recovery < 3_000, `back after ${recovery} ms`);
    await sleep(NEW_WINDOW_MS);
    assertShared(await burst(servers, token), 'after SIGCONT');
    for (const server of servers) {
      assert.equal(lines(server, WARNING).length, 1, server.stdout());
      assert.doesNotMatch(server.stderr(), /ioredis|Error/);
    }
  });
});

describe('a Redis that refuses connections from the start is passed by until it listens', () => {
  let redis: TestRedis;
  before(async () => (redis = await startRedis()));
  const pair = sharingPair(() => redis, { redisFirst: false });

  it('serves with the per-process limit while the port is closed, and shares once Redis listens on it', async (t) => {
    const { servers, token, normal } = pair;
    report(t, 'Redis refusing since the start', normal);
    await untilLogged(servers, WARNING, performance.now());
    for (const server of servers) assert.match(lines(server, WARNING)[0]!, /"reason":"connect ECONNREFUSED/);
    const away = await burst(servers, token);
    report(t, 'Redis refusing', away);
    assertCountedPerProcess(away, normal, 'Redis refusing');

    await redis.start();
    const recovery = await untilLogged(servers, BACK, performance.now());
    t.diagnostic(`shared counting ${recovery} ms after Redis started listening`);
    assert.ok(recovery < 3_000, `back after ${recovery} ms`);
    await sleep(NEW_WINDOW_MS);
    assertShared(await burst(servers, token), 'once Redis listens');
    for (const server of servers) assert.equal(lines(server, WARNING).length, 1, server.stdout());
  });
});

describe('a Redis that comes and goes is one warning a minute at most', () => {
  let redis: TestRedis;
  before(async () => (redis = await startRedis()));
  const pair = sharingPair(() => redis);

  it('logs the first outage and its end, and none of the outages that follow within the minute', async () => {
    const { servers, token } = pair;
    for (let outage = 1; outage <= 3; outage++) {
      await redis.signal(outage === 2 ? 'SIGSTOP' : 'SIGTERM');
      await sleep(NEW_WINDOW_MS);
      const away = await burst(servers, token);
      assert.deepEqual(away.others, []);
      assert.ok(away.limited > 0, `outage ${outage}: the per-process limit still refuses`);
      if (outage === 2) await redis.signal('SIGCONT');
      else await redis.start();
      await sleep(2_500); // back by then (the tests above measure it)
      await sleep(NEW_WINDOW_MS);
      assertShared(await burst(servers, token), `after outage ${outage}`);
    }
    for (const server of servers) {
      assert.equal(lines(server, WARNING).length, 1, server.stdout());
      assert.equal(lines(server, BACK).length, 1, server.stdout());
    }
  });

  it('tells an outage that began within the minute once the minute is up, with the short ones in between', () => {
    const logged: string[] = [];
    const log = {
      warn: (fields: object, message: string) => logged.push(`warn ${JSON.stringify(fields)} ${message}`),
      info: (fields: object, message?: string) => logged.push(`info ${JSON.stringify(fields)} ${message ?? ''}`),
    } as unknown as Parameters<typeof redisOutageLog>[0];
    let now = 0;
    const outages = redisOutageLog(log, 60_000, () => now);
    outages.away('connect ECONNREFUSED');
    now = 5_000;
    outages.back();
    now = 10_000;
    outages.away('connect ECONNREFUSED'); // within the minute: not told
    now = 12_000;
    outages.back();
    now = 20_000;
    outages.away('Command timed out');
    now = 59_000;
    outages.away('Command timed out'); // a failed probe, still within the minute
    now = 61_000;
    outages.away('Command timed out'); // the minute is up and Redis is still away
    now = 70_000;
    outages.back();
    assert.equal(logged.length, 4, logged.join('\n'));
    assert.match(logged[0]!, /^warn \{"reason":"connect ECONNREFUSED"\} .*unreachable/);
    assert.match(logged[1]!, /^info \{"awayMs":5000\} .*back/);
    assert.match(logged[2]!, /^warn \{"reason":"Command timed out","shortOutagesSinceLastWarning":1\}/);
    assert.match(logged[3]!, /^info \{"awayMs":50000\} .*back/);
  });
});
