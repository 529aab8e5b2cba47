import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { metric } from '../helpers/http.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { lanes, LoadClient } from '../helpers/load.js';
import { OWN_POSTGRES_SKIP, useOwnPostgres } from '../helpers/own-postgres.js';
import {
  ANSWER_BOUND_MS,
  assertAnsweredInBound,
  assertStillServing,
  closeLoaded,
  firstWriteAfter,
  loadedServer,
  readyAfter,
  RECOVERY_LIMIT_MS,
  refusalsAfterRecovery,
  report,
  stopLoad,
  TIMEOUT_MS,
  type Loaded,
} from '../helpers/pg-faults.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { insertPlants } from '../helpers/plants.js';
import { openStorage } from '../../src/storage/open.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Contract, "When what it depends on fails": a network to the database that goes silent (packets
 * dropped, no reset) is a fault like a stopped database, and so are connections the database
 * closes under the service (a terminated backend, a restart): every request answered within
 * `--database-timeout` plus 1 s, /readyz 503 within that, writes succeeding within 2 s of the
 * network healing, nothing acknowledged lost. And "A slow network": with 5 ms added each way, 64
 * clients creating at once are served at least 1,500 creates per second by one instance.
 *
 * The service reaches a PostgreSQL cluster of the test's own through a TCP proxy the test owns
 * (helpers/tcp-proxy.ts), which black-holes traffic (keeping the bytes, delivered after the heal
 * as TCP's retransmissions would), delays it, or ends its connections as the database would.
 */

let proxy: TcpProxy;
const pg = useOwnPostgres(async (cluster) => {
  proxy = await startTcpProxy({ host: '127.0.0.1', port: cluster.port });
});

after(async () => {
  await proxy?.close();
});

const throughProxy = (database: string) => `postgres://postgres@127.0.0.1:${proxy.port}/${database}`;

describe(
  'the network to PostgreSQL goes silent (a black hole) for 4 s under load, then heals',
  {
    skip: OWN_POSTGRES_SKIP,
  },
  () => {
    let run: Loaded;
    const times = { fault: 0, back: 0, write: 0, ready: 0 };
    let expired = 0;

    before(async () => {
      run = await loadedServer(throughProxy(await pg.createDatabase()));
      await sleep(1_000);
      times.fault = performance.now();
      proxy.blackHole();
      await sleep(2 * TIMEOUT_MS);
      proxy.heal();
      times.back = performance.now();
      times.write = await firstWriteAfter(run.load, times.back);
      times.ready = await readyAfter(run.probes, times.back);
      await sleep(1_000);
      await stopLoad(run);
      expired = await metric(run.server.url, 'plant_store_dependency_errors_total{dependency="postgres"}');
    });

    after(async () => {
      await closeLoaded(run);
    });

    it(`answers every request within ${ANSWER_BOUND_MS} ms while nothing comes back: 2xx or 503 with Retry-After, nothing hangs`, () => {
      const slowest = assertAnsweredInBound(run);
      // Writes answered while the network was silent (a read may be served by the page cache): none
      // can have had its commit's answer, so each is a 503.
      const during = run.load.answers.filter(
        (a) => a.kind !== 'read' && a.startedAt + a.ms >= times.fault + 200 && a.startedAt + a.ms < times.back,
      );
      report('black hole', {
        slowestRequestMs: Math.round(slowest),
        duringTheHole: during.length,
        statuses: Object.fromEntries(run.load.statuses),
      });
      assert.ok(during.length > 0, 'writes were answered while the network was silent');
      assert.deepEqual(
        during.filter((a) => a.status !== 503).map((a) => `${a.kind} ${a.status}`),
        [],
        'each write answered while the database was silent was refused',
      );
      assert.ok(expired > 0, 'plant_store_dependency_errors_total{dependency="postgres"} counted the fault');
    });

    it(`/readyz: 503 within ${ANSWER_BOUND_MS} ms of the network going silent, 200 again after it heals`, () => {
      const down = run.probes.firstAnswered(503, times.fault);
      assert.ok(down !== undefined, '/readyz answered 503');
      assert.ok(down - times.fault <= ANSWER_BOUND_MS, `/readyz 503 ${(down - times.fault).toFixed(0)} ms after`);
      report('black hole', { readyz503AfterFaultMs: Math.round(down - times.fault) });
      assert.ok(Number.isFinite(times.ready), '/readyz answered 200 again');
    });

    it(`takes writes again within ${RECOVERY_LIMIT_MS} ms of the heal, the dead connections dropped`, async () => {
      const write = times.write - times.back;
      const ready = times.ready - times.back;
      report('black hole', { firstWrite2xxAfterHealMs: Math.round(write), readyz200AfterHealMs: Math.round(ready) });
      assert.ok(write <= RECOVERY_LIMIT_MS, `the first write succeeded ${write.toFixed(0)} ms after`);
      assert.ok(ready <= RECOVERY_LIMIT_MS, `/readyz answered 200 ${ready.toFixed(0)} ms after`);
      assert.equal(await metric(run.server.url, 'plant_store_database_unreachable_seconds'), 0);
    });

    it('loses nothing acknowledged; a commit sent into the hole is stored wholly or not at all; the feed has every change once, in order', async () => {
      const counts = await run.load.audit({ refusedMeansNotStored: false });
      report('black hole', { ...counts, events: counts.events.length });
      assert.ok(counts.certain > 0);
      assert.ok(counts.opened > 0, 'the hole left some outcomes unknown');
    });

    it(`refuses nothing once the network has been back for ${RECOVERY_LIMIT_MS} ms`, () => {
      assert.deepEqual(refusalsAfterRecovery(run.load, times.back), []);
    });
  },
);

describe(
  "the database closes the service's connections again and again under load (each one 30 ms old or more, every 10 ms for 3 s)",
  {
    skip: OWN_POSTGRES_SKIP,
  },
  () => {
    let run: Loaded;
    let ended = 0;

    before(async () => {
      run = await loadedServer(throughProxy(await pg.createDatabase()));
      await sleep(1_000);
      const until = performance.now() + 3_000;
      while (performance.now() < until) {
        ended += proxy.endAll(30);
        await sleep(10);
      }
      await sleep(1_000);
      await stopLoad(run);
    });

    after(async () => {
      await closeLoaded(run);
    });

    // Each close is met wherever the driver is: reading (CONNECTION_CLOSED), or writing its next
    // statement after the close arrived and before the socket closed (EPIPE, "This socket has been
    // ended by the other party"). postgres.js alone, 64 queries at a time on 4 connections ended
    // every 5 ms for 15 s, rejected 306 queries with EPIPE and 44,915 with CONNECTION_CLOSED;
    // through the service's pool it is rarer still
    // (none in six runs of this case), and was answered 500 until it was counted as unavailable
    // (storage/unavailable.ts; test/storage/unavailable.test.ts makes one for certain).
    it('answers every request 2xx or 503 with Retry-After, never 500, however each close was met', () => {
      assertAnsweredInBound(run);
      const refusedFor = new Map<string, number>();
      for (const line of run.server.stdout().split('\n')) {
        const code = line.includes('"msg":"request refused"') ? /"code":"([^"]+)"/.exec(line)?.[1] : undefined;
        if (code !== undefined) refusedFor.set(code, (refusedFor.get(code) ?? 0) + 1);
      }
      report('connections closed', {
        ended,
        statuses: Object.fromEntries(run.load.statuses),
        refusedFor: Object.fromEntries(refusedFor),
      });
      assert.ok(ended >= 20, `${ended} connections closed`);
    });

    it('loses nothing acknowledged; the feed has every change once, in order', async () => {
      const counts = await run.load.audit({ refusedMeansNotStored: false });
      assert.ok(counts.certain > 0);
    });
  },
);

describe(
  'a request that waits on the database more than once (its token looked up again, then its commit or the feed head) is answered within --database-timeout plus 1 s in all',
  {
    skip: OWN_POSTGRES_SKIP,
  },
  () => {
    // Each round trip takes 1.8 s: the token's entry, stale after 500 ms, is confirmed by one read
    // (1.8 s), and the create's commit needs more than one round trip. Each call alone is within
    // the 2 s timeout or bounded by it; one after the other they took 3.8 s before a request's
    // wait was bounded as a whole.
    const LATENCY_MS = 900;
    let server: RunningServer;
    const answers: { status: number; retryAfter: string | null; ms: number }[] = [];
    let feed = { status: 0, ms: 0 };
    let streamsOpenAfter = Number.NaN;

    before(async () => {
      server = await startServer({
        database: throughProxy(await pg.createDatabase()),
        args: ['--database-timeout', `${TIMEOUT_MS / 1000}s`],
      });
      const token = server.firstToken!;
      const create = async (id: number) => {
        const started = performance.now();
        const response = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id, name: `plant ${id}` }),
        });
        await response.arrayBuffer();
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          ms: performance.now() - started,
        };
      };
      // The pool's connections dialled and the token known while the network is fast.
      assert.deepEqual(new Set((await Promise.all([1, 2, 3, 4].map(create))).map((a) => a.status)), new Set([200]));
      // A change feed opened meanwhile waits on the feed's head after the token: its 503 comes
      // first, the head later, and no stream may be opened on the answered response.
      const openFeed = async () => {
        const started = performance.now();
        const aborted = new AbortController();
        const response = await fetch(`${server.url}/events`, {
          headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
          signal: aborted.signal,
        });
        feed = { status: response.status, ms: performance.now() - started };
        aborted.abort();
      };
      proxy.latency(LATENCY_MS);
      await sleep(600);
      const [created] = await Promise.all([Promise.all([11, 12, 13].map(create)), openFeed()]);
      answers.push(...created);
      proxy.latency(0);
      await sleep(2 * LATENCY_MS + 500);
      streamsOpenAfter = await metric(server.url, 'plant_store_feed_streams_open');
    });

    after(async () => {
      proxy?.latency(0);
      await server?.stop();
    });

    it(`answers each within ${ANSWER_BOUND_MS} ms, 2xx or 503 with Retry-After`, () => {
      report('two waits in one request', { answers: answers.map((a) => `${a.status} after ${a.ms.toFixed(0)} ms`) });
      for (const answer of answers) {
        assert.ok(answer.ms <= ANSWER_BOUND_MS, `answered ${answer.status} after ${answer.ms.toFixed(0)} ms`);
        if (answer.status !== 503) assert.equal(answer.status, 200);
        else assert.ok(Number(answer.retryAfter) >= 1, `Retry-After: ${answer.retryAfter}`);
      }
      assertStillServing(server);
    });

    it('answers a change feed whose head comes after its 503 with that 503, and opens no stream for it', () => {
      report('two waits in one request', { feed: `${feed.status} after ${feed.ms.toFixed(0)} ms` });
      assert.equal(feed.status, 503, 'the feed waited past the deadline: else this case proves nothing');
      assert.ok(feed.ms <= ANSWER_BOUND_MS, `answered after ${feed.ms.toFixed(0)} ms`);
      assert.equal(streamsOpenAfter, 0, 'plant_store_feed_streams_open');
    });
  },
);

/**
 * What a client read of a streamed list: the array, or that the response broke off (an error, or
 * an end before the body was whole).
 */
function readSlowly(url: string, token: string, pauseMs: number, whilePaused: () => void) {
  return new Promise<{ status: number; plants: number | null; brokeOff: boolean }>((resolve) => {
    const request = http.get(`${url}/plants`, { headers: { authorization: `Bearer ${token}` } }, (response) => {
      // Not read at first: the server writes until the socket is full, and waits in the middle of its list.
      response.pause();
      let body = '';
      const done = (brokeOff: boolean) => {
        let plants: number | null = null;
        if (!brokeOff) {
          try {
            plants = (JSON.parse(body) as unknown[]).length;
          } catch {
            brokeOff = true;
          }
        }
        resolve({ status: response.statusCode ?? 0, plants, brokeOff });
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => done(!response.complete));
      response.on('error', () => done(true));
      void sleep(pauseMs).then(() => {
        whilePaused();
        return sleep(300).then(() => response.resume());
      });
    });
    request.on('error', () => resolve({ status: 0, plants: null, brokeOff: true }));
  });
}

describe(
  'the database closes the connection of a streamed full list half-way (GET /plants without limit)',
  {
    skip: OWN_POSTGRES_SKIP,
  },
  () => {
    // About 16 MB of JSON: more than the sockets between the server and a client that does not
    // read can hold (about 6 MB here), so the server is in the middle of the list at the cut.
    const PLANTS = 60_000;
    const name = (id: number) => `plant ${id} `.padEnd(250, 'x');
    let server: RunningServer;
    let read: Awaited<ReturnType<typeof readSlowly>>;
    let ended = 0;

    before(async () => {
      const database = await pg.createDatabase();
      server = await startServer({ database: throughProxy(database) });
      const direct = await openStorage(pg.url(database));
      try {
        for (let from = 0; from < PLANTS; from += 10_000) {
          const writes = Array.from({ length: 10_000 }, (_, i) => ({
            account: 'default',
            plant: { id: BigInt(from + i + 1), name: name(from + i + 1), tag: null },
          }));
          await insertPlants(direct, writes);
        }
      } finally {
        await direct.close();
      }
      read = await readSlowly(server.url, server.firstToken!, 1_000, () => (ended = proxy.endAll(0)));
    });

    after(async () => {
      await server?.stop();
    });

    // postgres.js answered the next read of a cursor whose connection had closed between two reads
    // with `done`: the list ended there, as a well-formed array. The project's patch rejects it.
    it('breaks the response off, never ends it as a whole array with plants missing', () => {
      report('streamed list cut', { ...read, ended });
      assert.ok(ended > 0, 'the stream held a connection to close');
      assert.equal(read.status, 200);
      assert.ok(
        read.brokeOff || read.plants === PLANTS,
        `the response ended as a whole array of ${read.plants} plants of ${PLANTS}`,
      );
      assert.ok(read.brokeOff, 'the list was whole: the cut did not come in its middle, so this case proved nothing');
    });

    it('serves the whole list again on the next request', async () => {
      const again = await readSlowly(server.url, server.firstToken!, 0, () => {});
      assert.deepEqual(again, { status: 200, plants: PLANTS, brokeOff: false });
    });
  },
);

/** Creates per second from `clients` clients each creating one plant after another for `seconds`. */
async function createRate(server: RunningServer, clients: number, seconds: number, base: bigint) {
  const client = new LoadClient(server.url, clients);
  const token = server.firstToken!;
  let created = 0;
  const other = new Map<number, number>();
  const until = performance.now() + seconds * 1_000;
  const started = performance.now();
  await lanes(clients, async (lane) => {
    let next = base + BigInt(lane) * 1_000_000n;
    while (performance.now() < until) {
      const id = next++;
      const answer = await client.post(token, `{"id":${id},"name":"p${id}"}`);
      if (answer.status >= 200 && answer.status < 300) created++;
      else other.set(answer.status, (other.get(answer.status) ?? 0) + 1);
    }
  });
  const elapsed = (performance.now() - started) / 1_000;
  client.close();
  return { perSecond: Math.round(created / elapsed), created, other: Object.fromEntries(other) };
}

describe(
  'a slow network: 5 ms added each way to PostgreSQL, 64 clients creating at once',
  {
    skip: OWN_POSTGRES_SKIP,
  },
  () => {
    let server: RunningServer;
    const measured: Record<string, { perSecond: number; created: number; other: Record<number, number> }> = {};

    before(async () => {
      server = await startServer({
        database: throughProxy(await pg.createDatabase()),
        args: ['--database-timeout', `${TIMEOUT_MS / 1000}s`],
      });
      proxy.latency(0);
      await createRate(server, 64, 1, 900_000_000n); // warm-up
      measured.direct = await createRate(server, 64, 3, 100_000_000n);
      proxy.latency(5);
      measured.slow = await createRate(server, 64, 5, 500_000_000n);
      proxy.latency(0);
    });

    after(async () => {
      proxy?.latency(0);
      await server?.stop();
    });

    it('serves every create, and reports creates per second with a 10 ms round trip (the contract asks 1,500)', () => {
      report('creates per second, 64 clients', {
        roundTrip0ms: measured.direct,
        roundTrip10ms: measured.slow,
      });
      assertStillServing(server);
      assert.deepEqual(measured.slow!.other, {}, 'every create answered 2xx');
      // The figure depends on the machine (2 cores shared with the rest of npm test); a floor far
      // below the contract's 1,500 catches a collapse (round trips per commit growing), not a target.
      assert.ok(measured.slow!.perSecond >= 200, `${measured.slow!.perSecond} creates per second`);
    });
  },
);
