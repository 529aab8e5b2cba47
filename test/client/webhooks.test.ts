import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { PlantStore, PlantStoreError, verifyWebhook, WebhookVerificationError } from 'plant-store-client';
import { Webhook } from 'standardwebhooks';
import { ENGINES, sqlite, withFreshStore } from '../helpers/engines.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';

const secret = `whsec_${randomBytes(24).toString('base64')}`;
const body = '{"id":9007199254740993,"name":"Monstera","tag":"aroid"}';

/** A delivery as the server makes it, signed by the reference `standardwebhooks` library. */
function delivery({ key = secret, at = new Date(), id = 'msg_1', payload = body } = {}) {
  return {
    'content-type': 'application/json',
    'plant-store-event': 'plant.created',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign(id, at, payload),
  };
}

describe('verifyWebhook checks Standard Webhooks signatures and returns the typed event', () => {
  it('accepts what the standardwebhooks library signs, with the plant id exact', async () => {
    const event = await verifyWebhook(body, delivery(), secret);
    assert.equal(event.id, 'msg_1');
    assert.equal(event.type, 'plant.created');
    assert.equal(event.plant.id, 9007199254740993n);
    assert.deepEqual(event.plant, { id: 9007199254740993n, name: 'Monstera', tag: 'aroid' });
    assert.ok(Math.abs(event.timestamp.getTime() - Date.now()) < 60_000);
  });

  it("takes the body as bytes, and the headers as a fetch Headers or any framework's look-alike", async () => {
    const event = await verifyWebhook(new TextEncoder().encode(body), new Headers(delivery()), secret);
    assert.equal(event.plant.name, 'Monstera');
    const headers = new Map(Object.entries(delivery()));
    const lookAlike = { get: (name: string) => headers.get(name) ?? null } as unknown as Headers;
    assert.equal((await verifyWebhook(body, lookAlike, secret)).plant.name, 'Monstera');
  });

  it('accepts any one of several signatures, and either of two secrets while rotating', async () => {
    const other = `whsec_${randomBytes(24).toString('base64')}`;
    const headers = delivery();
    headers['webhook-signature'] = `v1,${randomBytes(32).toString('base64')} ${headers['webhook-signature']}`;
    assert.equal((await verifyWebhook(body, headers, secret)).id, 'msg_1');
    assert.equal((await verifyWebhook(body, delivery({ key: other }), [secret, other])).id, 'msg_1');
  });

  it('refuses a changed body, another secret, a stale or future timestamp, missing headers', async () => {
    const refusals: [string | Uint8Array, Record<string, string>][] = [
      [body.replace('3', '2'), delivery()],
      [body, delivery({ key: `whsec_${randomBytes(24).toString('base64')}` })],
      [body, delivery({ at: new Date(Date.now() - 6 * 60_000) })],
      [body, delivery({ at: new Date(Date.now() + 6 * 60_000) })],
      [body, { ...delivery(), 'webhook-signature': 'v2,abc' }],
      [body, { ...delivery(), 'webhook-id': 'msg_2' }],
      [body, (({ 'webhook-id': _, ...rest }) => rest)(delivery())],
    ];
    for (const [raw, headers] of refusals)
      await assert.rejects(verifyWebhook(raw, headers, secret), WebhookVerificationError);
  });
});

const WEBHOOK_OPERATIONS = [
  'createWebhook',
  'listWebhooks',
  'getWebhook',
  'updateWebhook',
  'deleteWebhook',
  'rotateWebhookSecret',
  'listWebhookDeliveries',
  'recoverWebhookDeliveries',
];

/** The operationIds the server's document has today (the /webhooks routes land with another branch). */
const served: string[] = await withFreshStore(sqlite, async (database) => {
  const server = await startServer({ database });
  try {
    const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId?: string }>>;
    };
    return Object.values(document.paths).flatMap((item) => Object.values(item).map((op) => op.operationId ?? ''));
  } finally {
    await server.stop();
  }
});
const webhooksServed = WEBHOOK_OPERATIONS.some((op) => served.includes(op));

if (!webhooksServed) {
  describe('the webhook methods against a real server', () => {
    it('wait for the /webhooks operations: the served document has none of them yet', () => {
      assert.deepEqual(
        WEBHOOK_OPERATIONS.filter((op) => served.includes(op)),
        [],
      );
    });
  });
}

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A subscriber on 127.0.0.1 answering 200 and handing each delivery over in order. */
async function startReceiver() {
  const waiting: ((r: Received) => void)[] = [];
  const arrived: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received = { headers: req.headers, body: Buffer.concat(chunks) };
      const take = waiting.shift();
      if (take) take(received);
      else arrived.push(received);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    next: () =>
      arrived.length > 0
        ? Promise.resolve(arrived.shift()!)
        : new Promise<Received>((resolve, reject) => {
            waiting.push(resolve);
            setTimeout(() => reject(new Error('no delivery within 30 s')), 30_000).unref();
          }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

for (const engine of webhooksServed ? ENGINES : []) {
  describe(`every webhook method against a real server, deliveries verified (${engine.name})`, () => {
    let server: RunningServer;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let drop = async () => {};
    let client: PlantStore;
    before(async () => {
      const store = await engine.fresh();
      drop = store.drop;
      server = await startServer({ database: store.url, env: { WEBHOOK_ALLOW_PRIVATE: '1' } });
      receiver = await startReceiver();
      client = new PlantStore({ baseUrl: server.url, token: (await createToken(store.url, 'hooks')).token });
    });
    after(async () => {
      await server?.stop();
      await receiver?.close();
      await drop();
    });

    it('creates, reads, changes, rotates, lists deliveries, recovers and deletes', async () => {
      const created = await client.createWebhook({ url: receiver.url, description: 'client test' });
      assert.match(created.secret, /^whsec_/);
      assert.equal(created.url, receiver.url);
      const listed = await client.listWebhooks();
      assert.deepEqual(
        listed.map((w) => w.id),
        [created.id],
      );
      assert.ok(!('secret' in listed[0]!));
      const read = await client.getWebhook(created.id);
      assert.ok(!('secret' in read));
      const all = ['plant.created', 'plant.updated', 'plant.deleted'] as const;
      assert.deepEqual((await client.updateWebhook(created.id, { events: [...all] })).events, all);

      await client.addPlant({ id: 2n ** 53n + 1n, name: 'hooked' });
      const first = await receiver.next();
      const event = await verifyWebhook(first.body, first.headers, created.secret);
      assert.equal(event.type, 'plant.created');
      assert.deepEqual(event.plant, { id: 2n ** 53n + 1n, name: 'hooked' });

      const rotated = await client.rotateWebhookSecret(created.id);
      assert.notEqual(rotated.secret, created.secret);
      await client.updatePlant(2n ** 53n + 1n, { tag: 'x' });
      const second = await receiver.next();
      for (const key of [rotated.secret, created.secret]) {
        const updated = await verifyWebhook(second.body, second.headers, key);
        assert.equal(updated.type, 'plant.updated');
      }

      const deliveries = await client.listWebhookDeliveries(created.id, { limit: 10 });
      assert.ok(Array.isArray(deliveries) && deliveries.length >= 2, JSON.stringify(deliveries));
      const recovery = await client.recoverWebhookDeliveries(created.id, { since: new Date(Date.now() - 3600_000) });
      assert.equal(typeof recovery, 'object');

      await client.deleteWebhook(created.id);
      await assert.rejects(client.getWebhook(created.id), (e) => e instanceof PlantStoreError && e.status === 404);
    });
  });
}
