import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES } from '../helpers/engines.js';
import { postBatch, postPlant } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
import { Receiver, registerEndpoint, verify, WEBHOOK_TEST_ARGS } from '../helpers/webhooks.js';

/** Longer than one retry of the test schedule (1 s +-20 %), for "nothing more arrives". */
const QUIET_MS = 2_500;

for (const engine of ENGINES) {
  describe(`POST /plants/batch reports one plant.created per newly stored plant (${engine.name})`, () => {
    const s = realServer(engine, WEBHOOK_TEST_ARGS);
    const receivers: Receiver[] = [];
    after(async () => {
      await Promise.all(receivers.map((r) => r.close()));
    });
    let accounts = 0;

    async function subscriber() {
      const token = (await createToken(s.database, `batch-hook-${engine.name}-${accounts++}`)).token;
      const receiver = await Receiver.start();
      receivers.push(receiver);
      const endpoint = await registerEndpoint(s.url, token, { url: receiver.url() });
      return { token, receiver, endpoint };
    }

    it('one signed event per new plant, exact int64 ids, none for items that repeat a stored plant', async () => {
      const { token, receiver, endpoint } = await subscriber();
      assert.equal((await postPlant(s.url, token, '{"id": 1, "name": "old"}')).status, 200);
      const body =
        '[{"id":1,"name":"old"},{"id":9007199254740993,"name":"new","tag":"t"},{"id":2,"name":"two"},{"id":2,"name":"two"}]';
      assert.equal((await postBatch(s.url, token, body)).status, 200);
      const events = await receiver.waitFor(3);
      await sleep(QUIET_MS);
      assert.equal(receiver.received.length, 3, 'the old plant and the repeated item report nothing');
      assert.deepEqual(
        events.map((event) => event.event),
        ['plant.created', 'plant.created', 'plant.created'],
      );
      assert.deepEqual(events.map((event) => event.body).sort(), [
        '{"id":1,"name":"old"}',
        '{"id":2,"name":"two"}',
        '{"id":9007199254740993,"name":"new","tag":"t"}',
      ]);
      assert.equal(new Set(events.map((event) => event.id)).size, 3, 'each event has its own webhook-id');
      for (const event of events) assert.ok(verify(endpoint.secret, event));
    });

    it('none for a re-sent batch, a 400 or a 409', async () => {
      const { token, receiver } = await subscriber();
      const batch = [
        { id: 10, name: 'ten' },
        { id: 11, name: 'eleven' },
      ];
      assert.equal((await postBatch(s.url, token, batch)).status, 200);
      await receiver.waitFor(2);
      assert.equal((await postBatch(s.url, token, batch)).status, 200);
      assert.equal((await postBatch(s.url, token, [{ id: 12, name: 'x' }, { id: 13 }])).status, 400);
      assert.equal(
        (
          await postBatch(s.url, token, [
            { id: 14, name: 'x' },
            { id: 10, name: 'other' },
          ])
        ).status,
        409,
      );
      await sleep(QUIET_MS);
      assert.equal(receiver.received.length, 2);
    });
  });
}
