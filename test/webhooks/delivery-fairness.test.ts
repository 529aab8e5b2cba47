import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES } from '../helpers/engines.js';
import { postBatch, postPlant } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
import { Receiver, registerEndpoint } from '../helpers/webhooks.js';

/** A receiver that accepts connections and reads requests but never answers, as an attacker's would. */
async function silentReceiver() {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = http.createServer(() => {
    requests++;
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    requests: () => requests,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A receiver that answers 200 after `delayMs`, counting the requests it holds at each moment. */
async function slowReceiver(delayMs: number) {
  let holding = 0;
  const held: Array<{ at: number; holding: number }> = [];
  const server = http.createServer((request, response) => {
    request.resume();
    held.push({ at: Date.now(), holding: ++holding });
    setTimeout(() => {
      holding--;
      response.end();
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    /** The most requests held at once among those that arrived after `since`. */
    mostHeldSince: (since: number) => Math.max(0, ...held.filter((h) => h.at >= since).map((h) => h.holding)),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Alice's delivery is measured from her create's answer to its arrival. */
const ALICE_WITHIN_MS = 2_000;
/** An account's share of the slots: a quarter of the default --webhook-concurrency (64). */
const ACCOUNT_SHARE = 16;

for (const engine of ENGINES) {
  // The default timeout (10 s), so that bob's attempts hold their slots as long as they can; the
  // default concurrency, so that the shares are the ones a production server has.
  const name = `one account's silent endpoints do not hold back another account's deliveries (${engine.name})`;
  describe(name, { skip: engine.skip }, () => {
    const s = realServer(engine, ['--webhook-allow-private']);
    for (const endpoints of [8, 16]) {
      it(`delivers alice's event within ${ALICE_WITHIN_MS} ms beside bob's ${endpoints} endpoints that never answer`, async () => {
        const silent = await silentReceiver();
        const healthy = await Receiver.start();
        try {
          const bob = (await createToken(s.database, `bob-${endpoints}-${engine.name}`)).token;
          for (let i = 0; i < endpoints; i++) await registerEndpoint(s.url, bob, { url: `${silent.url}/${i}` });
          const plants = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `bob's ${i + 1}` }));
          assert.equal((await postBatch(s.url, bob, JSON.stringify(plants))).status, 200);
          // Bob's attempts are in flight: every slot his account may take, taken (each of his
          // endpoints alone could take 4, so 8 of them could take 32 and 16 every slot).
          const deadline = Date.now() + 5_000;
          while (silent.requests() < ACCOUNT_SHARE && Date.now() < deadline) await sleep(20);
          assert.equal(silent.requests(), ACCOUNT_SHARE, "bob's attempts in flight");

          const alice = (await createToken(s.database, `alice-${endpoints}-${engine.name}`)).token;
          await registerEndpoint(s.url, alice, { url: healthy.url() });
          assert.equal((await postPlant(s.url, alice, { id: 1, name: "alice's" })).status, 200);
          const acknowledgedAt = Date.now();
          const [delivered] = await healthy.waitFor(1, () => true, ALICE_WITHIN_MS + 10_000);
          const delayMs = delivered!.at - acknowledgedAt;
          console.log(`alice's delivery beside ${endpoints} silent endpoints of bob's: ${delayMs} ms`);
          assert.ok(delayMs < ALICE_WITHIN_MS, `arrived ${delayMs} ms after the create was acknowledged`);
          assert.equal(silent.requests(), ACCOUNT_SHARE, 'bob still holds his share and no more');
        } finally {
          await Promise.all([silent.close(), healthy.close()]);
        }
      });
    }
  });
}

describe('a slow endpoint is given fewer attempts at once, and another keeps its pace (sqlite)', () => {
  const s = realServer(ENGINES[0]!, ['--webhook-allow-private']);
  it('falls to one attempt in flight once its answers take over a second', async () => {
    const slow = await slowReceiver(1_200);
    const fast = await Receiver.start();
    try {
      const slowAccount = (await createToken(s.database, 'slow')).token;
      const fastAccount = (await createToken(s.database, 'fast')).token;
      await registerEndpoint(s.url, slowAccount, { url: slow.url });
      await registerEndpoint(s.url, fastAccount, { url: fast.url() });
      const plants = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ id: i + 1, name: `p${i}` })));
      const startedAt = Date.now();
      assert.equal((await postBatch(s.url, slowAccount, plants(40))).status, 200);
      assert.equal((await postBatch(s.url, fastAccount, plants(300))).status, 200);
      await fast.waitFor(300, () => true, 20_000);
      // Its first attempts (the initial window of 4) answer after 1.2 s, each halving the window.
      await sleep(3_000 - (Date.now() - startedAt));
      const after = Date.now();
      await sleep(2_500);
      assert.equal(slow.mostHeldSince(after), 1, 'one attempt at a time');
      assert.ok(slow.mostHeldSince(startedAt) <= 4, 'never more than its initial window');
    } finally {
      await Promise.all([slow.close(), fast.close()]);
    }
  });
});
