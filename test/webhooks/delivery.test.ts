import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES_AND_POOLER } from '../helpers/engines.js';
import { call, postPlant } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
import {
  deletePlant,
  deliveries,
  patchPlant,
  patchWebhook,
  Receiver,
  recover,
  registerEndpoint,
  verify,
  WEBHOOK_TEST_ARGS,
  type Endpoint,
} from '../helpers/webhooks.js';
import { eventually } from '../helpers/wait.js';

/** Longer than one retry of the test schedule (1 s +-20 %), for "nothing more arrives". */
const QUIET_MS = 2_500;

for (const engine of ENGINES_AND_POOLER) {
  // Every case has an account, a receiver and an endpoint of its own, and most wait on the retry
  // schedule: they run at once, on one server.
  describe(`webhook deliveries (${engine.name})`, { skip: engine.skip, concurrency: true }, () => {
    const s = realServer(engine, WEBHOOK_TEST_ARGS);
    const receivers: Receiver[] = [];
    after(async () => {
      await Promise.all(receivers.map((r) => r.close()));
    });
    let accounts = 0;

    /** A fresh account with a receiver and an endpoint subscribed to `events`. */
    async function subscriber(events = ['plant.created', 'plant.updated', 'plant.deleted']) {
      const token = (await createToken(s.database, `sub-${engine.name}-${accounts++}`)).token;
      const receiver = await Receiver.start();
      receivers.push(receiver);
      const endpoint = await registerEndpoint(s.url, token, { url: receiver.url(), events });
      return { token, receiver, endpoint };
    }

    describe('a delivery is signed as Standard Webhooks and verifies with the standardwebhooks package', () => {
      it('POSTs the plant as NewPlant JSON with the webhook headers', async () => {
        const { token, receiver, endpoint } = await subscriber();
        const reply = await postPlant(s.url, token, '{"id": 9223372036854775807, "name": "Monstera", "tag": "aroid"}');
        assert.equal(reply.status, 200);
        const [event] = await receiver.waitFor(1);
        assert.equal(event!.body, '{"id":9223372036854775807,"name":"Monstera","tag":"aroid"}');
        assert.equal(event!.contentType, 'application/json');
        assert.equal(event!.event, 'plant.created');
        assert.match(event!.id, /^msg_[\w-]+$/);
        assert.ok(Math.abs(Number(event!.timestamp) - Date.now() / 1000) < 60);
        assert.match(event!.signature, /^v1,[A-Za-z0-9+/]+=*$/);
        assert.equal(event!.path, '/hook');
        // As a receiver would: verified, then parsed.
        // JSON.parse reads the id as the nearest double.
        assert.deepEqual(verify(endpoint.secret, event!), {
          id: Number(9223372036854775807n),
          name: 'Monstera',
          tag: 'aroid',
        });
        assert.throws(() => verify(endpoint.secret, { ...event!, body: event!.body.replace('aroid', 'fern') }));
        const other = await subscriber();
        assert.throws(() => verify(other.endpoint.secret, event!), 'another secret does not verify it');
      });
      it('writes ids exactly over int64: 2^53 + 1 and 2^53 are two plants, two bodies', async () => {
        const { token, receiver } = await subscriber();
        await postPlant(s.url, token, '{"id": 9007199254740993, "name": "a"}');
        await postPlant(s.url, token, '{"id": 9007199254740992, "name": "b"}');
        await postPlant(s.url, token, '{"id": -9223372036854775808, "name": "c"}');
        const bodies = (await receiver.waitFor(3)).map((r) => r.body).sort();
        assert.deepEqual(bodies, [
          '{"id":-9223372036854775808,"name":"c"}',
          '{"id":9007199254740992,"name":"b"}',
          '{"id":9007199254740993,"name":"a"}',
        ]);
      });
    });

    describe('one event per change acknowledged to the caller, none for a replay, 409, 400, 412, 404 or no-op PATCH', () => {
      it('sends created, updated and deleted once each, and nothing for the rest', async () => {
        const { token, receiver } = await subscriber();
        assert.equal((await postPlant(s.url, token, { id: 7, name: 'Fern' })).status, 200);
        assert.equal((await postPlant(s.url, token, { id: 7, name: 'Fern' })).status, 200, 'replay');
        assert.equal((await postPlant(s.url, token, { id: 7, name: 'Other' })).status, 409);
        assert.equal((await postPlant(s.url, token, { id: 8 })).status, 400);
        assert.equal((await patchPlant(s.url, token, '7', {})).status, 200, 'empty PATCH');
        assert.equal((await patchPlant(s.url, token, '7', { name: 'Fern' })).status, 200, 'PATCH to the same name');
        assert.equal((await patchPlant(s.url, token, '7', { name: 'Big fern' }, { 'if-match': '"nope"' })).status, 412);
        assert.equal((await patchPlant(s.url, token, '7', { name: 'Big fern', tag: 'pteridophyte' })).status, 200);
        assert.equal((await deletePlant(s.url, token, '7')).status, 204);
        assert.equal((await deletePlant(s.url, token, '7')).status, 404);
        assert.equal((await patchPlant(s.url, token, '7', { name: 'gone' })).status, 404);
        const received = await receiver.waitFor(3);
        await sleep(QUIET_MS);
        assert.equal(receiver.received.length, 3, receiver.received.map((r) => r.event).join());
        const byType = Object.fromEntries(received.map((r) => [r.event, r.body]));
        assert.deepEqual(byType, {
          'plant.created': '{"id":7,"name":"Fern"}',
          'plant.updated': '{"id":7,"name":"Big fern","tag":"pteridophyte"}',
          'plant.deleted': '{"id":7,"name":"Big fern","tag":"pteridophyte"}',
        });
        assert.equal(new Set(received.map((r) => r.id)).size, 3, 'each event has its own webhook-id');
      });
      it('sends only the event types the endpoint subscribed to, and only its own account’s', async () => {
        const { token, receiver } = await subscriber(['plant.deleted']);
        const neighbour = await subscriber();
        await postPlant(s.url, token, { id: 1, name: 'x' });
        await patchPlant(s.url, token, '1', { name: 'y' });
        await deletePlant(s.url, token, '1');
        const [deleted] = await receiver.waitFor(1);
        assert.equal(deleted!.event, 'plant.deleted');
        await sleep(QUIET_MS);
        assert.equal(receiver.received.length, 1);
        assert.equal(neighbour.receiver.received.length, 0, "another account's endpoint got nothing");
      });
    });

    describe('retries: the same webhook-id on every attempt, on the schedule, then failed', () => {
      it('retries a non-2xx answer until a 2xx', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = (_r, i) => ({ status: i < 2 ? 500 : 200 });
        await postPlant(s.url, token, { id: 1, name: 'retry me' });
        const attempts = await receiver.waitFor(3);
        assert.equal(new Set(attempts.map((a) => a.id)).size, 1, 'one webhook-id throughout');
        for (let i = 1; i < 3; i++) {
          const gap = attempts[i]!.at - attempts[i - 1]!.at;
          assert.ok(gap >= 700, `retry ${i} came ${gap} ms after the previous attempt (schedule 1s +-20%)`);
          verify(endpoint.secret, attempts[i]!);
        }
        const [view] = await eventually('delivered', async () => {
          const list = await deliveries(s.url, token, endpoint.id);
          return list[0]?.state === 'delivered' ? list : undefined;
        });
        assert.equal(view!.attempts, 3);
        assert.equal(view!.lastStatus, 200);
        assert.equal(view!.nextAttemptAt, null);
      });
      it('marks the event failed after the last retry, and recover sends it again with its original id', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = () => ({ status: 500 });
        const since = new Date(Date.now() - 1_000).toISOString();
        await postPlant(s.url, token, { id: 1, name: 'doomed' });
        const attempts = await receiver.waitFor(3);
        const [failed] = await eventually('failed', async () => {
          const list = await deliveries(s.url, token, endpoint.id);
          return list[0]?.state === 'failed' ? list : undefined;
        });
        assert.deepEqual(
          { attempts: failed!.attempts, lastStatus: failed!.lastStatus, next: failed!.nextAttemptAt },
          { attempts: 3, lastStatus: 500, next: null },
        );
        await sleep(QUIET_MS);
        assert.equal(receiver.received.length, 3, 'no attempt after failing');

        receiver.answer = () => ({ status: 204 });
        const none = await recover(s.url, token, endpoint.id, { since: new Date(Date.now() + 60_000).toISOString() });
        assert.equal(none.status, 202);
        assert.deepEqual(none.json, { queued: 0 }, 'a window without the event queues nothing');
        const queued = await recover(s.url, token, endpoint.id, { since, until: new Date().toISOString() });
        assert.equal(queued.status, 202);
        assert.deepEqual(queued.json, { queued: 1 });
        const [again] = await receiver.waitFor(1, (r) => r.at > attempts[2]!.at);
        assert.equal(again!.id, attempts[0]!.id, 'the original webhook-id');
        assert.equal(again!.body, attempts[0]!.body);
        verify(endpoint.secret, again!);
        await eventually('delivered after recover', async () =>
          (await deliveries(s.url, token, endpoint.id))[0]?.state === 'delivered' ? true : undefined,
        );
      });
      it('honours Retry-After on a 429 or 503 when it is later than the schedule', async () => {
        const { token, receiver } = await subscriber();
        receiver.answer = (_r, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 });
        await postPlant(s.url, token, { id: 1, name: 'later' });
        const [first, second] = await receiver.waitFor(2);
        const gap = second!.at - first!.at;
        assert.ok(gap >= 2_800, `the retry came ${gap} ms later; Retry-After said 3 s (the schedule 1 s)`);
      });
      it('does not follow redirects: a 3xx is a failed attempt', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = (r) =>
          r.path === '/hook' ? { status: 307, headers: { location: '/elsewhere' } } : { status: 200 };
        await postPlant(s.url, token, { id: 1, name: 'no redirects' });
        await receiver.waitFor(1);
        const [view] = await eventually('attempted', async () => {
          const list = await deliveries(s.url, token, endpoint.id);
          return list[0]?.lastStatus ? list : undefined;
        });
        assert.equal(view!.lastStatus, 307);
        assert.notEqual(view!.state, 'delivered');
        assert.ok(
          receiver.received.every((r) => r.path === '/hook'),
          'nothing went to the redirect target',
        );
      });
      it('counts an answer that does not come within the timeout as failed, and the API stays responsive', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = (_r, i) => (i === 0 ? 'hang' : { status: 200 });
        await postPlant(s.url, token, { id: 1, name: 'slow receiver' });
        await receiver.waitFor(1);
        const writes = await Promise.all(
          Array.from({ length: 50 }, (_, i) => postPlant(s.url, token, { id: 100 + i, name: 'meanwhile' })),
        );
        assert.deepEqual([...new Set(writes.map((w) => w.status))], [200]);
        await receiver.waitFor(52);
        const list = await eventually('all delivered', async () => {
          const all = await call(`${s.url}/webhooks/${endpoint.id}/deliveries?limit=1000`, { token });
          const views = all.json as Array<{ state: string; attempts: number; lastError: string | null }>;
          return views.length === 51 && views.every((v) => v.state === 'delivered') ? views : undefined;
        });
        assert.equal(list.filter((v) => v.attempts === 2).length, 1, 'the hung attempt was made again');
      });
    });

    describe('a 410 disables the endpoint at once; its pending events fail; PATCH enables it again', () => {
      it('disables, fails, stops queueing; enabling resumes and recover brings the failed back', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = () => ({ status: 410 });
        const since = new Date(Date.now() - 1_000).toISOString();
        await postPlant(s.url, token, { id: 1, name: 'gone' });
        await receiver.waitFor(1);
        const disabled = await eventually('disabled', async () => {
          const reply = await call(`${s.url}/webhooks/${endpoint.id}`, { token });
          return (reply.json as Endpoint).enabled ? undefined : reply.json;
        });
        assert.equal((disabled as Endpoint).enabled, false);
        const [view] = await deliveries(s.url, token, endpoint.id);
        assert.deepEqual({ state: view!.state, lastStatus: view!.lastStatus }, { state: 'failed', lastStatus: 410 });

        await postPlant(s.url, token, { id: 2, name: 'while disabled' });
        assert.equal((await recover(s.url, token, endpoint.id, { since })).status, 409, 'recover needs it enabled');
        await sleep(QUIET_MS);
        assert.equal(receiver.received.length, 1, 'a disabled endpoint receives nothing');
        assert.equal((await deliveries(s.url, token, endpoint.id)).length, 1, 'and queues nothing');

        receiver.answer = () => ({ status: 200 });
        assert.equal((await patchWebhook(s.url, token, endpoint.id, { enabled: true })).status, 200);
        await postPlant(s.url, token, { id: 3, name: 'back' });
        const recovered = await recover(s.url, token, endpoint.id, { since });
        assert.deepEqual(recovered.json, { queued: 1 });
        const later = await receiver.waitFor(2, (r) => r.at > receiver.received[0]!.at);
        assert.deepEqual(later.map((r) => r.body).sort(), ['{"id":1,"name":"gone"}', '{"id":3,"name":"back"}']);
      });
      it('PATCH enabled: false fails the pending events the same way', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = () => ({ status: 503 });
        await postPlant(s.url, token, { id: 1, name: 'pending' });
        await receiver.waitFor(1);
        await patchWebhook(s.url, token, endpoint.id, { enabled: false });
        const [view] = await deliveries(s.url, token, endpoint.id);
        assert.equal(view!.state, 'failed');
        await sleep(QUIET_MS);
        assert.equal(receiver.received.length, 1);
      });
    });

    describe('rotate-secret: for 24 h the old secret signs beside the new one', () => {
      it('sends two signatures, each verifying with its secret', async () => {
        const { token, receiver, endpoint } = await subscriber();
        const reply = await call(`${s.url}/webhooks/${endpoint.id}/rotate-secret`, { method: 'POST', token });
        const rotated = reply.json as Endpoint;
        await postPlant(s.url, token, { id: 1, name: 'signed twice' });
        const [event] = await receiver.waitFor(1);
        assert.equal(event!.signature.split(' ').length, 2);
        assert.match(event!.signature, /^v1,\S+ v1,\S+$/);
        verify(rotated.secret, event!);
        verify(endpoint.secret, event!);
      });
    });

    describe('DELETE /webhooks/{id} drops its pending deliveries', () => {
      it('makes no further attempt', async () => {
        const { token, receiver, endpoint } = await subscriber();
        receiver.answer = () => ({ status: 500 });
        await postPlant(s.url, token, { id: 1, name: 'dropped' });
        await receiver.waitFor(1);
        assert.equal((await call(`${s.url}/webhooks/${endpoint.id}`, { method: 'DELETE', token })).status, 204);
        await sleep(QUIET_MS);
        assert.equal(receiver.received.length, 1);
      });
    });

    describe('GET /webhooks/{id}/deliveries lists the events newest first', () => {
      it('shows id, type, state, attempts, last status or error, next attempt; limit bounds it', async () => {
        const { token, receiver, endpoint } = await subscriber();
        // One after another, each delivered before the next is made: their order is known.
        for (let i = 1; i <= 3; i++) {
          await postPlant(s.url, token, { id: i, name: `p${i}` });
          await receiver.waitFor(i);
        }
        const received = await receiver.waitFor(3);
        const list = await eventually('three delivered', async () => {
          const all = await deliveries(s.url, token, endpoint.id);
          return all.length === 3 && all.every((d) => d.state === 'delivered') ? all : undefined;
        });
        const idOf = (body: string) => received.find((r) => r.body === body)!.id;
        assert.deepEqual(
          list.map((d) => d.eventId),
          [idOf('{"id":3,"name":"p3"}'), idOf('{"id":2,"name":"p2"}'), idOf('{"id":1,"name":"p1"}')],
        );
        assert.deepEqual(Object.keys(list[0]!).sort(), [
          'attempts',
          'createdAt',
          'eventId',
          'eventType',
          'lastError',
          'lastStatus',
          'nextAttemptAt',
          'state',
        ]);
        assert.deepEqual(
          {
            type: list[0]!.eventType,
            attempts: list[0]!.attempts,
            status: list[0]!.lastStatus,
            error: list[0]!.lastError,
          },
          { type: 'plant.created', attempts: 1, status: 200, error: null },
        );
        const one = await call(`${s.url}/webhooks/${endpoint.id}/deliveries?limit=1`, { token });
        assert.deepEqual(
          (one.json as Array<{ eventId: string }>).map((d) => d.eventId),
          [list[0]!.eventId],
        );
      });
      it('shows the error of an attempt that got no answer, and when the next one is due', async () => {
        const token = (await createToken(s.database, `refused-${engine.name}`)).token;
        const closed = await Receiver.start();
        const url = closed.url();
        await closed.close();
        const endpoint = await registerEndpoint(s.url, token, { url });
        await postPlant(s.url, token, { id: 1, name: 'nobody home' });
        const [view] = await eventually('an attempt', async () => {
          const list = await deliveries(s.url, token, endpoint.id);
          return list[0]?.attempts ? list : undefined;
        });
        assert.equal(view!.lastStatus, null);
        assert.match(view!.lastError ?? '', /connection refused/);
        if (view!.state === 'pending') assert.ok(Date.parse(view!.nextAttemptAt!) > Date.parse(view!.createdAt));
      });
    });

    describe('/metrics counts deliveries by outcome and shows pending events and the oldest one’s age', () => {
      it('exposes the counters and gauges', async () => {
        const { token, receiver } = await subscriber();
        receiver.answer = () => ({ status: 500 });
        await postPlant(s.url, token, { id: 1, name: 'metered' });
        await receiver.waitFor(1);
        const series = {
          delivered: /^plant_store_webhook_deliveries_total\{outcome="delivered"\} (\d+)/m,
          retrying: /^plant_store_webhook_deliveries_total\{outcome="retrying"\} (\d+)/m,
          pending: /^plant_store_webhook_pending_events (\d+)/m,
          oldest: /^plant_store_webhook_oldest_pending_age_seconds ([\d.e+-]+)/m,
        };
        let text = '';
        const value = (line: RegExp) => Number(line.exec(text)?.[1] ?? NaN);
        // The failed attempt is counted once its result is written, a moment after the receiver answered.
        await eventually('the failed attempt counted', async () => {
          text = (await call(`${s.url}/metrics`)).text;
          return value(series.retrying) > 0 ? true : undefined;
        });
        const seen = `in /metrics:\n${text}`;
        assert.ok(value(series.delivered) > 0, `the deliveries made so far are counted as delivered, ${seen}`);
        assert.ok(value(series.retrying) > 0, `the failed attempt is counted as retrying, ${seen}`);
        assert.ok(value(series.pending) >= 1, `its event is pending, ${seen}`);
        assert.ok(value(series.oldest) > 0, `the oldest pending event has an age, ${seen}`);
      });
    });
  });

  const retention = `--webhook-retention removes delivered and failed events past it (${engine.name})`;
  describe(retention, { skip: engine.skip }, () => {
    const s = realServer(engine, [...WEBHOOK_TEST_ARGS, '--webhook-retention', '1s']);
    it('empties the deliveries listing once the event is older than the retention', async () => {
      const receiver = await Receiver.start();
      try {
        const endpoint = await registerEndpoint(s.url, s.token, { url: receiver.url() });
        await postPlant(s.url, s.token, { id: 1, name: 'ephemeral' });
        // Listed at once (written with the create), so that an empty listing below means pruned.
        assert.equal((await deliveries(s.url, s.token, endpoint.id)).length, 1);
        await receiver.waitFor(1);
        await eventually('pruned', async () =>
          (await deliveries(s.url, s.token, endpoint.id)).length === 0 ? true : undefined,
        );
      } finally {
        await receiver.close();
      }
    });
  });
}
