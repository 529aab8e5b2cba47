import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES, withFreshStore } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { startServer } from '../helpers/server.js';
import { deliveries, Receiver, registerEndpoint, verify } from '../helpers/webhooks.js';
import { eventually } from '../helpers/wait.js';

const ARGS = [
  '--webhook-allow-private',
  '--webhook-timeout',
  '2s',
  '--webhook-retry-schedule',
  Array(20).fill('1s').join(','),
];

for (const engine of ENGINES) {
  describe(`the outbox: an acknowledged change's event survives kill -9 (${engine.name})`, () => {
    it('delivers every event answered 2xx before the kill, after a restart, with its original webhook-id', async () => {
      await withFreshStore(engine, async (database) => {
        // The receiver's port, then the receiver down.
        const probe = await Receiver.start();
        const port = probe.port;
        await probe.close();

        const first = await startServer({ database, args: ARGS });
        const token = first.firstToken!;
        const endpoint = await registerEndpoint(first.url, token, { url: `http://127.0.0.1:${port}/hook` });
        const replies = await Promise.all(
          Array.from({ length: 20 }, (_, i) => postPlant(first.url, token, { id: i, name: `plant ${i}` })),
        );
        assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
        await first.stop('SIGKILL');

        const second = await startServer({ database, args: ARGS });
        let receiver: Receiver | undefined;
        try {
          const queued = await deliveries(second.url, token, endpoint.id);
          assert.equal(queued.length, 20);
          assert.ok(queued.every((d) => d.state === 'pending'));
          receiver = await Receiver.start(port);
          const received = await receiver.waitFor(20);
          assert.deepEqual(new Set(received.map((r) => r.id)), new Set(queued.map((d) => d.eventId)));
          assert.deepEqual(
            new Set(received.map((r) => r.body)),
            new Set(Array.from({ length: 20 }, (_, i) => `{"id":${i},"name":"plant ${i}"}`)),
          );
          for (const r of received) verify(endpoint.secret, r);
        } finally {
          await receiver?.close();
          await second.stop();
        }
      });
    });

    it('lets another process take over the lease of a process killed mid-attempt', async () => {
      await withFreshStore(engine, async (database) => {
        const receiver = await Receiver.start();
        receiver.answer = (_r, i) => (i === 0 ? 'hang' : { status: 200 });
        const first = await startServer({ database, args: ARGS });
        const token = first.firstToken!;
        const endpoint = await registerEndpoint(first.url, token, { url: receiver.url() });
        const second = await (async () => {
          try {
            assert.equal((await postPlant(first.url, token, { id: 1, name: 'in flight' })).status, 200);
            await receiver.waitFor(1);
            await first.stop('SIGKILL');
            return await startServer({ database, args: ARGS });
          } catch (error) {
            await first.stop('SIGKILL');
            await receiver.close();
            throw error;
          }
        })();
        try {
          const [hung, retried] = await receiver.waitFor(2, () => true, 60_000);
          assert.equal(retried!.id, hung!.id, 'the same event, by its webhook-id');
          const [view] = await eventually('delivered', async () => {
            const list = await deliveries(second.url, token, endpoint.id);
            return list[0]?.state === 'delivered' ? list : undefined;
          });
          assert.equal(view!.attempts, 1, 'the attempt cut short by the kill is not counted');
        } finally {
          await receiver.close();
          await second.stop();
        }
      });
    });
  });
}
