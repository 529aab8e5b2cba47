import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/instance.js';
import { issueToken } from '../../src/auth/api-tokens.js';
import { FeedCursors } from '../../src/feed/cursor.js';
import { openStorage } from '../../src/storage/open.js';
import type { Storage } from '../../src/storage/types.js';
import type { PlantChange } from '../../src/storage/types/plants.js';
import { TEST_CONFIG } from '../helpers/app.js';
import { ENGINES } from '../helpers/engines.js';
import { openFeed } from '../helpers/sse.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * "Exactly once, in order ... two changes in flight at the same time: in the order they
 * committed." The hard case is PostgreSQL, where a number drawn in a transaction is not its commit
 * order. Several stores on one database (as several instances are) write at once, each through a
 * TCP proxy of the test's own whose delay changes at random every few milliseconds (up to
 * DELAY_MS each way), so that transactions overlap and try to commit out of order; readers
 * reconnect at random, from their last cursor or an older one, and every session must get exactly
 * the events that follow its cursor.
 */

const WRITERS = 4;
const TRANSACTIONS_PER_WRITER = 30;
const READERS = 5;
const ACCOUNT = 'commit-order';
/** The most each proxy delays a chunk, each way. */
const DELAY_MS = 15;

/**
 * Each transaction creates plants and, with `updates`, renames one the writer created before: a
 * mixed group is a transaction of statements apart (postgres/plants.ts), numbered by its last. On
 * PostgreSQL also creates alone: a group of them is one statement (postgres/plant-writes.ts)
 * whose numbering must keep the same order.
 */
const RUNS = ENGINES.flatMap((engine) => [
  { engine, updates: true, how: ', creates and updates' },
  ...(engine.name === 'sqlite' ? [] : [{ engine, updates: false, how: ', creates in one statement' }]),
]);

/** The writer stores' links to PostgreSQL: proxies whose delays change at random until `stop`. */
async function jitteryLinks(url: string, count: number) {
  const target = new URL(url);
  const proxies: TcpProxy[] = [];
  for (let i = 0; i < count; i++) {
    proxies.push(await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) }));
  }
  const jitter = setInterval(() => {
    for (const proxy of proxies) proxy.latency(Math.random() * DELAY_MS);
  }, 5);
  return {
    urls: proxies.map((proxy) => Object.assign(new URL(url), { port: String(proxy.port) }).toString()),
    async stop() {
      clearInterval(jitter);
      for (const proxy of proxies) await proxy.close();
    },
  };
}

for (const { engine, updates, how } of RUNS) {
  describe(`the change feed keeps commit order under concurrent writers (${engine.name}${how})`, () => {
    let app: FastifyInstance;
    let base = '';
    let token = '';
    let drop = async () => {};
    let unlink = async () => {};
    const stores: Storage[] = [];

    before(async () => {
      const fresh = await engine.fresh();
      drop = fresh.drop;
      stores.push(await openStorage(fresh.url));
      if (engine.name === 'sqlite') {
        for (let i = 0; i < WRITERS; i++) stores.push(await openStorage(fresh.url));
      } else {
        const links = await jitteryLinks(fresh.url, WRITERS);
        unlink = links.stop;
        for (const url of links.urls) stores.push(await openStorage(url));
      }
      app = await buildServer({
        config: { ...TEST_CONFIG, database: fresh.url, logLevel: 'warn' },
        storage: stores[0]!,
      });
      base = await app.listen({ port: 0, host: '127.0.0.1' });
      token = (await issueToken(stores[0]!, ACCOUNT)).secret;
    });
    after(async () => {
      await app?.close();
      for (const store of stores) await store.close();
      await unlink();
      await drop();
    });

    it('gives every reader every event once, in commit order, from any cursor', { timeout: 120_000 }, async () => {
      let nextId = 1n;
      let writing = true;
      const write = async (store: Storage, writer: number) => {
        let earlier: bigint | null = null;
        for (let t = 0; t < TRANSACTIONS_PER_WRITER; t++) {
          const size = 1 + Math.floor(Math.random() * 3);
          const changes: PlantChange[] = Array.from({ length: size }, (_, k) => ({
            kind: 'create' as const,
            account: ACCOUNT,
            plant: { id: nextId++, name: `w${writer}-${t}-${k}`, tag: null, revision: 1n },
            eventId: `msg_order_${writer}_${t}_${k}`,
          }));
          if (updates && earlier !== null) {
            changes.push({
              kind: 'update',
              account: ACCOUNT,
              id: earlier,
              set: { name: `w${writer}-${t}-renamed` },
              revision: BigInt(t + 2),
              eventId: `msg_order_${writer}_${t}_renamed`,
            });
          }
          earlier = (changes[0] as Extract<PlantChange, { kind: 'create' }>).plant.id;
          await store.applyChanges(changes);
        }
      };
      // Writers 1..N write as other instances would; writer 0 through the app's own HTTP API.
      const viaHttp = async () => {
        for (let t = 0; t < TRANSACTIONS_PER_WRITER; t++) {
          const response = await fetch(`${base}/plants`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: `{"id":${nextId++},"name":"http-${t}"}`,
          });
          assert.equal(response.status, 200);
        }
      };

      type Session = { from: string; got: string[] };
      const sessions: Session[][] = Array.from({ length: READERS }, () => []);
      const read = async (reader: number) => {
        const cursors: string[] = [];
        let cursor: string | undefined;
        for (;;) {
          // Mostly from the last cursor; while the writers write, sometimes from an older one it had
          // seen. Once they are done, only forward: going back at random, a reader took hundreds of
          // sessions to reach the end.
          const from =
            writing && cursors.length > 0 && Math.random() < 0.3
              ? cursors[Math.floor(Math.random() * cursors.length)]
              : cursor;
          const feed = await openFeed(base, { token, ...(from !== undefined && { lastEventId: from }) });
          assert.equal(feed.status, 200);
          const ready = (await feed.next())!;
          const session: Session = { from: ready.id!, got: [] };
          sessions[reader]!.push(session);
          const want = 1 + Math.floor(Math.random() * 15);
          try {
            for (let i = 0; i < want; i++) {
              const message = await feed.next(writing ? 5_000 : 1_000).catch(() => null);
              if (message === null) break;
              session.got.push(message.id!);
              cursors.push(message.id!);
            }
          } finally {
            feed.close();
          }
          cursor = session.got.at(-1) ?? session.from;
          if (!writing && session.got.length === 0) return;
          await sleep(Math.random() * 50);
        }
      };

      const readers = Array.from({ length: READERS }, (_, r) => read(r));
      await Promise.all([viaHttp(), ...stores.slice(1).map((store, w) => write(store, w + 1))]);
      writing = false;
      await Promise.all(readers);

      // The truth: the account's events as numbered, each as its cursor.
      const cursors = new FeedCursors(() => stores[0]!.feedKey());
      await cursors.ready();
      const events = await stores[0]!.feedEvents(ACCOUNT, 0n, 1_000_000);
      const total = WRITERS * TRANSACTIONS_PER_WRITER + TRANSACTIONS_PER_WRITER;
      assert.ok(events.length >= total, `at least one event per transaction (${events.length})`);
      assert.deepEqual(
        events.map((e) => e.seq),
        events.map((_, i) => BigInt(i + 1)),
        'numbered 1, 2, 3... without gaps',
      );
      const truth = [cursors.encode(ACCOUNT, 0n), ...events.map((e) => cursors.encode(ACCOUNT, e.seq))];
      const position = new Map(truth.map((cursor, i) => [cursor, i]));
      for (const [reader, list] of sessions.entries()) {
        for (const session of list) {
          const start = position.get(session.from);
          assert.ok(start !== undefined, `reader ${reader}: ready's cursor is one of the account's`);
          assert.deepEqual(
            session.got,
            truth.slice(start + 1, start + 1 + session.got.length),
            `reader ${reader}: the events right after its cursor, in order, none skipped or repeated`,
          );
        }
        // The last session of each reader ended only when nothing more came: it had reached the end.
        const last = list.at(-1)!;
        assert.equal(position.get(last.from), truth.length - 1, `reader ${reader} reached the last event`);
      }
    });
  });
}
