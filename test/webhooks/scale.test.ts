import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES, pg, withFreshStore } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { deliveries, Receiver, registerEndpoint, WEBHOOK_TEST_ARGS } from '../helpers/webhooks.js';

const EVENTS = 200;

/** Sends EVENTS creates spread over `servers`, then checks that each event arrived exactly once. */
async function exactlyOnce(servers: RunningServer[], token: string, receiver: Receiver) {
  const endpoint = await registerEndpoint(servers[0]!.url, token, { url: receiver.url() });
  for (let batch = 0; batch < EVENTS; batch += 20) {
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        postPlant(servers[(batch + i) % servers.length]!.url, token, { id: batch + i, name: `p${batch + i}` }),
      ),
    );
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
  }
  await receiver.waitFor(EVENTS, () => true, 60_000);
  await sleep(2_500); // a second copy of any event would arrive within this
  const ids = receiver.ids();
  assert.equal(ids.length, EVENTS, 'none twice');
  assert.equal(new Set(ids).size, EVENTS, 'none lost');
  assert.deepEqual(
    new Set(receiver.received.map((r) => r.body)),
    new Set(Array.from({ length: EVENTS }, (_, i) => `{"id":${i},"name":"p${i}"}`)),
  );
  const listed = await deliveries(servers[0]!.url, token, endpoint.id);
  assert.ok(listed.every((d) => d.state === 'delivered' && d.attempts === 1));
}

for (const engine of ENGINES) {
  describe(`--workers 2: each event is delivered once by one of the processes (${engine.name})`, () => {
    it(`delivers ${EVENTS} events, none lost, none twice`, async () => {
      await withFreshStore(engine, async (database) => {
        const receiver = await Receiver.start();
        const server = await startServer({ database, args: [...WEBHOOK_TEST_ARGS, '--workers', '2'] });
        try {
          await exactlyOnce([server], server.firstToken!, receiver);
        } finally {
          await receiver.close();
          await server.stop();
        }
      });
    });
  });
}

if (ENGINES.includes(pg)) {
  describe('two instances on one PostgreSQL: each event is delivered once', () => {
    it(`delivers ${EVENTS} events written through both, none lost, none twice`, async () => {
      await withFreshStore(pg, async (database) => {
        const receiver = await Receiver.start();
        const a = await startServer({ database, args: WEBHOOK_TEST_ARGS });
        const b = await startServer({ database, args: WEBHOOK_TEST_ARGS });
        try {
          await exactlyOnce([a, b], a.firstToken ?? b.firstToken!, receiver);
        } finally {
          await receiver.close();
          await Promise.all([a.stop(), b.stop()]);
        }
      });
    });
  });
}
