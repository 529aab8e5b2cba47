import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStorage } from '../../src/storage/open.js';
import { ENGINES } from '../helpers/engines.js';
import { call, postPlant } from '../helpers/http.js';
import { insertPlants } from '../helpers/plants.js';
import { createToken, runCli } from '../helpers/server.js';
import { openFeed } from '../helpers/sse.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** The contract's "Kept alive", "Retained" and "Bounded" rules of GET /events, on real servers. */

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(25);
  }
}

for (const engine of ENGINES) {
  describe(`change feed: at most --event-streams-per-account per account, --event-streams per process (${engine.name})`, () => {
    const s = realServer(engine, ['--event-streams-per-account', '2', '--event-streams', '3']);

    it('the next stream of the account gets 429 with Retry-After; other accounts are not affected until the process is full', async () => {
      const other = (await createToken(s.database, 'bounds-other')).token;
      const a1 = await openFeed(s.url, { token: s.token });
      const a2 = await openFeed(s.url, { token: s.token });
      try {
        assert.deepEqual([a1.status, a2.status], [200, 200]);
        const third = await call(`${s.url}/events`, { token: s.token, headers: { accept: 'text/event-stream' } });
        assert.equal(third.status, 429);
        assert.ok(isErrorBody(third));
        assert.match(third.headers.get('retry-after') ?? '', /^\d+$/);
        const b1 = await openFeed(s.url, { token: other });
        assert.equal(b1.status, 200, 'another account opens its own');
        const full = await call(`${s.url}/events`, { token: other, headers: { accept: 'text/event-stream' } });
        assert.equal(full.status, 429, 'the process holds as many as it may');
        b1.close();
        a1.close();
        // A closed stream frees its place.
        await until('a place is free again', async () => {
          const again = await openFeed(s.url, { token: s.token });
          again.close();
          return again.status === 200;
        });
      } finally {
        a1.close();
        a2.close();
      }
    });
  });

  describe(`change feed: a comment line every --event-heartbeat (${engine.name})`, () => {
    const s = realServer(engine, ['--event-heartbeat', '1s']);
    it('sends comment lines while nothing happens', async () => {
      const feed = await openFeed(s.url, { token: s.token });
      try {
        await feed.next();
        await until('two heartbeats arrived', () => feed.comments.length >= 2, 5_000);
      } finally {
        feed.close();
      }
    });
  });

  describe(`change feed: a cursor older than --event-retention gets 410 (${engine.name})`, () => {
    const s = realServer(engine, ['--event-retention', '1s']);
    it('answers 410 once the events after the cursor are gone', async () => {
      const feed = await openFeed(s.url, { token: s.token });
      const ready = await feed.next();
      await postPlant(s.url, s.token, '{"id":1,"name":"old"}');
      await postPlant(s.url, s.token, '{"id":2,"name":"old"}');
      const [first] = await feed.take(2);
      feed.close();
      // The first event's cursor still opens while its successor is kept; both go after a second.
      await until(
        'retention removed them',
        async () => {
          const attempt = await openFeed(s.url, { token: s.token, lastEventId: first!.id! });
          attempt.close();
          return attempt.status === 410;
        },
        15_000,
      );
      const gone = await call(`${s.url}/events`, {
        token: s.token,
        headers: { accept: 'text/event-stream', 'last-event-id': first!.id! },
      });
      assert.equal(gone.status, 410);
      assert.ok(isErrorBody(gone));
      const old = await call(`${s.url}/events?after=${ready!.id}`, {
        token: s.token,
        headers: { accept: 'text/event-stream' },
      });
      assert.equal(old.status, 410);
      // Without a cursor the feed opens as ever.
      const fresh = await openFeed(s.url, { token: s.token });
      fresh.close();
      assert.equal(fresh.status, 200);
    });
  });

  describe(`change feed: a revoked token ends its streams within 1 s (${engine.name})`, () => {
    const s = realServer(engine);
    it('ends the stream after token revoke', async () => {
      const created = await createToken(s.database, 'revoked-reader');
      const feed = await openFeed(s.url, { token: created.token });
      await feed.next();
      const revoked = runCli(['token', 'revoke', created.id, '--database', s.database]);
      assert.equal(revoked.status, 0, revoked.stderr);
      const start = Date.now();
      await Promise.race([feed.ended, sleep(5_000)]);
      const took = Date.now() - start;
      feed.close();
      // 1 s is the rule; the margin is for a loaded test machine.
      assert.ok(took < 2_000, `ended ${took} ms after the revocation`);
    });
  });

  describe(`change feed: a reader that stops reading is cut off and loses nothing (${engine.name})`, () => {
    const s = realServer(engine, ['--event-stream-buffer', '4096']);
    it(
      'closes the stream once its unsent events pass the bound; resuming gets every event',
      { timeout: 60_000 },
      async () => {
        // A raw client that reads the ready message, then stops reading.
        const url = new URL(s.url);
        const socket = connect(Number(url.port), url.hostname);
        socket.write(
          `GET /events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${s.token}\r\nAccept: text/event-stream\r\n\r\n`,
        );
        let head = '';
        await until('ready arrived', () => /event: ready/.test(head), 5_000).catch(() => {});
        socket.on('data', (chunk) => {
          head += chunk.toString();
          if (/event: ready\ndata: \{\}\n\n/.test(head)) socket.pause();
        });
        await until('ready arrived', () => /event: ready\ndata: \{\}\n\n/.test(head), 5_000);
        const cursor = /id: (\S+)\nevent: ready/.exec(head)![1]!;

        // Events until the server gives up on the reader: the kernel's socket buffers take the first
        // megabytes, however large they are on this host.
        const CHUNK = 1_000;
        let count = 0;
        const cut = () => /"reason":"slow-reader"/.test(s.server!.stdout());
        const store = await openStorage(s.database);
        try {
          const name = 'n'.repeat(250);
          while (!cut() && count < 40 * CHUNK) {
            const from = count;
            await insertPlants(
              store,
              Array.from({ length: CHUNK }, (_, i) => ({
                account: 'default',
                plant: { id: BigInt(from + i + 1), name, tag: null },
              })),
            );
            count += CHUNK;
            await until('the chunk reached the stream', () => cut(), 500).catch(() => {});
          }
        } finally {
          await store.close();
        }
        await until('the server cut the reader off', cut, 10_000);
        const COUNT = count;
        socket.destroy();

        const resumed = await openFeed(s.url, { token: s.token, lastEventId: cursor });
        try {
          assert.equal((await resumed.next())?.event, 'ready');
          const all = await resumed.take(COUNT, 30_000);
          assert.deepEqual(
            all.map((m) => JSON.parse(m.data).id),
            Array.from({ length: COUNT }, (_, i) => i + 1),
          );
        } finally {
          resumed.close();
        }
      },
    );
  });

  describe(`change feed: SIGTERM closes open streams at once (${engine.name})`, () => {
    const s = realServer(engine);
    it('ends the stream and the process exits 0 promptly', async () => {
      const feed = await openFeed(s.url, { token: s.token });
      await feed.next();
      const start = Date.now();
      const code = await s.server!.stop('SIGTERM');
      await feed.ended;
      assert.equal(code, 0);
      assert.ok(Date.now() - start < 3_000, `stopped in ${Date.now() - start} ms`);
    });
  });
}
