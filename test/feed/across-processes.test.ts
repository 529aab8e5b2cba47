import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { PlantStore, PlantStoreError, type FeedEvent } from 'plant-store-client';
import { ENGINES, withFreshStore } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { createToken, startServer } from '../helpers/server.js';
import { openFeed } from '../helpers/sse.js';

/**
 * "Exactly once, in order ... across restarts, kill -9, --workers processes and instances on one
 * PostgreSQL", and "within 1 s on another instance"; the client's streamEvents reconnecting.
 */

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Takes events from the iterator until `count` changes (not ready) arrived. */
async function changes(events: AsyncGenerator<FeedEvent>, count: number): Promise<FeedEvent[]> {
  const got: FeedEvent[] = [];
  while (got.length < count) {
    const { value, done } = await events.next();
    if (done) throw new Error('the iterator ended');
    if (value.type !== 'ready') got.push(value);
  }
  return got;
}

for (const engine of ENGINES) {
  describe(`the change feed across processes (${engine.name})`, () => {
    it(
      'the client follows through kill -9 and a restart, losing and repeating nothing',
      { timeout: 90_000 },
      async () => {
        await withFreshStore(engine, async (database) => {
          const port = await freePort();
          const args = ['--port', String(port)];
          let server = await startServer({ database, args });
          const { token } = await createToken(database, 'restart');
          const client = new PlantStore({ baseUrl: server.url, token });
          const abort = new AbortController();
          const events = client.streamEvents({ signal: abort.signal });
          try {
            const first = await events.next();
            assert.equal(first.value?.type, 'ready');
            for (let id = 1; id <= 3; id++) await postPlant(server.url, token, `{"id":${id},"name":"before"}`);
            const before = await changes(events, 3);
            assert.deepEqual(
              before.map((e) => e.plant?.id),
              [1n, 2n, 3n],
            );
            await server.stop('SIGKILL');
            server = await startServer({ database, args });
            const big = 9223372036854775807n;
            await postPlant(server.url, token, `{"id":${big},"name":"after"}`);
            await postPlant(server.url, token, '{"id":4,"name":"after"}');
            const after = await changes(events, 2);
            assert.deepEqual(
              after.map((e) => [e.type, e.plant?.id]),
              [
                ['plant.created', big],
                ['plant.created', 4n],
              ],
            );
          } finally {
            abort.abort();
            await events.return(undefined).catch(() => {});
            await server.stop();
          }
        });
      },
    );

    it('a cursor older than the retained events makes the client throw its 410', { timeout: 60_000 }, async () => {
      await withFreshStore(engine, async (database) => {
        const server = await startServer({ database, args: ['--event-retention', '1s'] });
        try {
          const { token } = await createToken(database, 'expired');
          const client = new PlantStore({ baseUrl: server.url, token });
          const feed = client.streamEvents();
          const ready = (await feed.next()).value!;
          await postPlant(server.url, token, '{"id":1,"name":"x"}');
          await changes(feed, 1);
          await feed.return(undefined);
          await new Promise((resolve) => setTimeout(resolve, 3_000));
          const resumed = client.streamEvents({ after: ready.cursor });
          await assert.rejects(
            resumed.next(),
            (error: unknown) => error instanceof PlantStoreError && error.status === 410,
          );
        } finally {
          await server.stop();
        }
      });
    });

    it(
      'two instances on one store: a change through one reaches streams on the other within 1 s, in order',
      { timeout: 90_000 },
      async () => {
        await withFreshStore(engine, async (database) => {
          const servers = [await startServer({ database }), await startServer({ database })];
          try {
            const { token } = await createToken(database, 'two-instances');
            const feeds = await Promise.all(servers.map((s) => openFeed(s.url, { token })));
            for (const feed of feeds) assert.equal((await feed.next())?.event, 'ready');
            const start = Date.now();
            await postPlant(servers[0]!.url, token, '{"id":1,"name":"one"}');
            const remote = await feeds[1]!.next(5_000);
            const took = Date.now() - start;
            assert.equal(remote?.data, '{"id":1,"name":"one"}');
            assert.ok(took < 1_500, `reached the other instance in ${took} ms`); // 1 s is the rule; margin for load
            assert.equal((await feeds[0]!.next())?.data, remote?.data);
            // Writes through both, concurrently: both streams see the same order.
            await Promise.all(
              Array.from({ length: 40 }, (_, i) => postPlant(servers[i % 2]!.url, token, `{"id":${i + 2},"name":"n"}`)),
            );
            const seen = await Promise.all(feeds.map((feed) => feed.take(40, 20_000)));
            assert.deepEqual(
              seen[0]!.map((m) => m.id),
              seen[1]!.map((m) => m.id),
            );
            assert.equal(new Set(seen[0]!.map((m) => m.data)).size, 40);
            for (const feed of feeds) feed.close();
          } finally {
            await Promise.all(servers.map((s) => s.stop()));
          }
        });
      },
    );

    it('--workers 2: every stream sees every change, whichever worker took it', { timeout: 90_000 }, async () => {
      await withFreshStore(engine, async (database) => {
        const server = await startServer({ database, args: ['--workers', '2'] });
        try {
          const { token } = await createToken(database, 'workers');
          const feeds = await Promise.all([1, 2, 3, 4].map(() => openFeed(server.url, { token })));
          for (const feed of feeds) assert.equal((await feed.next())?.event, 'ready');
          await Promise.all(
            Array.from({ length: 20 }, (_, i) => postPlant(server.url, token, `{"id":${i + 1},"name":"w"}`)),
          );
          const seen = await Promise.all(feeds.map((feed) => feed.take(20, 20_000)));
          for (const got of seen)
            assert.deepEqual(
              got.map((m) => m.id),
              seen[0]!.map((m) => m.id),
            );
          for (const feed of feeds) feed.close();
        } finally {
          assert.equal(await server.stop(), 0);
        }
      });
    });
  });
}
