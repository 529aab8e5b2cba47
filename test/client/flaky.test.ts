import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { PlantStore, PlantStoreError, type PlantStoreOptions } from 'plant-store-client';
import { ENGINES } from '../helpers/engines.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
import { startFlakyProxy, type Fault, type FlakyProxy, type Plan, type SeenRequest } from './flaky-proxy.js';

/** A small seeded generator, so that a failing run can be replayed. */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FAULTS: Fault[] = [
  'drop-before',
  'drop-after',
  { status: 429, retryAfter: '0' },
  { status: 503, retryAfter: '0' },
];

/** Each distinct request meets 0 to 3 random faults before it goes through. */
function flakyPlan(seed: number): Plan {
  const random = seeded(seed);
  const faultsFor = new Map<string, number>();
  return ({ method, path, body }, nth) => {
    const key = `${method} ${path} ${body}`;
    if (!faultsFor.has(key)) faultsFor.set(key, Math.floor(random() * 4));
    return nth < faultsFor.get(key)! ? FAULTS[Math.floor(random() * FAULTS.length)]! : 'pass';
  };
}

async function inLanes<T>(items: T[], lanes: number, work: (item: T) => Promise<unknown>) {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

for (const engine of ENGINES) {
  describe(`through a flaky proxy (${engine.name})`, () => {
    const s = realServer(engine);
    let proxy: FlakyProxy;
    let token: string;
    before(async () => {
      proxy = await startFlakyProxy(s.url);
      token = (await createToken(s.database, 'flaky')).token;
    });
    after(() => proxy.close());

    describe('retried creates, listings and deletes: no plant duplicated, none lost', () => {
      it('80 creates, a paged listing and 40 deletes through drops (before and after), 429s and 503s', async () => {
        const client = new PlantStore({
          baseUrl: proxy.url,
          token,
          retries: { retries: 5, baseDelayMs: 5, maxDelayMs: 1000 },
        });
        proxy.plan = flakyPlan(13);
        const ids = Array.from({ length: 80 }, (_, i) => 2n ** 53n + BigInt(i) * 3n);
        await inLanes(ids, 6, (id) => client.addPlant({ id, name: `plant ${id}`, tag: 'flaky' }));

        const direct = new PlantStore({ baseUrl: s.url, token });
        const stored = (await direct.listPlants({ limit: 1000 })).plants.map((p) => p.name);
        assert.deepEqual(
          stored,
          ids.map((id) => `plant ${id}`),
        );

        const paged: string[] = [];
        for await (const plant of client.plants({ pageSize: 7 })) paged.push(plant.name);
        assert.deepEqual(paged, stored);

        const doomed = ids.filter((_, i) => i % 2 === 0);
        await inLanes(doomed, 6, (id) => client.deletePlant(id));
        const left = (await direct.listPlants({ limit: 1000 })).plants.map((p) => p.name);
        assert.deepEqual(
          left,
          ids.filter((_, i) => i % 2 === 1).map((id) => `plant ${id}`),
        );

        // The run met every kind of fault, and creates were really sent more than once.
        const faults = new Set(proxy.seen.map((r) => r.fault));
        for (const kind of ['drop-before', 'drop-after', '429', '503']) assert.ok(faults.has(kind), kind);
        const posts = proxy.seen.filter((r) => r.method === 'POST');
        assert.ok(posts.some((r) => r.fault === 'drop-after'));
        assert.ok(posts.length > ids.length, `${posts.length} POSTs`);
      });
    });

    /** The requests the proxy saw from the call `work` makes, with the faults scripted for it. */
    async function sentFor(
      script: Fault[],
      work: () => Promise<unknown>,
    ): Promise<{ value?: unknown; error?: unknown; sent: SeenRequest[] }> {
      proxy.plan = () => 'pass';
      proxy.script.splice(0, Infinity, ...script);
      const from = proxy.seen.length;
      const outcome = await work().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      );
      await delay(300); // room for a retry that should not come
      proxy.script.length = 0;
      return { ...outcome, sent: proxy.seen.slice(from) };
    }
    const via = (options: Partial<PlantStoreOptions> = {}) =>
      new PlantStore({ baseUrl: proxy.url, token, retries: { retries: 3, baseDelayMs: 5 }, ...options });
    const status503: Fault = { status: 503, retryAfter: '0' };

    describe('only requests safe to repeat are retried', () => {
      it('retries a create, and a PATCH with If-Match', async () => {
        const client = via();
        const created = await sentFor([status503, { status: 429, retryAfter: '0' }, 'drop-before'], () =>
          client.addPlant({ id: 1n, name: 'Aloe' }),
        );
        assert.deepEqual((created.value as { plant: unknown }).plant, { name: 'Aloe' });
        assert.equal(created.sent.length, 4);
        const { etag } = await client.getPlant(1n);
        const patched = await sentFor([status503, 'drop-after'], () =>
          client.updatePlant(1n, { tag: 'x' }, { ifMatch: etag }),
        );
        // The 'drop-after' attempt changed the plant and its answer was lost: the retry finds a
        // new ETag. The change is there; the caller is told with a 412 after 3 attempts.
        assert.ok(patched.error instanceof PlantStoreError);
        assert.equal(patched.error.status, 412);
        assert.equal(patched.error.attempts, 3);
        assert.deepEqual((await client.getPlant(1n)).plant, { name: 'Aloe', tag: 'x' });
      });

      it('does not retry a PATCH without If-Match, nor the POSTs of webhooks', async () => {
        const client = via();
        await client.addPlant({ id: 2n, name: 'Fern' });
        for (const call of [
          () => client.updatePlant(2n, { tag: 'y' }),
          () => client.createWebhook({ url: 'https://example.com/hook' }),
          () => client.rotateWebhookSecret('wh_1'),
          () => client.recoverWebhookDeliveries('wh_1', { since: new Date(0) }),
        ]) {
          const answered = await sentFor([status503], call);
          assert.equal(answered.sent.length, 1);
          assert.ok(answered.error instanceof PlantStoreError);
          assert.equal(answered.error.status, 503);
          const dropped = await sentFor(['drop-before'], call);
          assert.equal(dropped.sent.length, 1);
          assert.ok(dropped.error instanceof TypeError, String(dropped.error));
        }
      });

      it('gives up after the last retry with the last answer', async () => {
        const failed = await sentFor([status503, status503, status503], () => via({ retries: 2 }).getPlant(1n));
        assert.equal(failed.sent.length, 3);
        assert.ok(failed.error instanceof PlantStoreError);
        assert.equal(failed.error.attempts, 3);
      });
    });

    describe('Retry-After is honoured', () => {
      it('waits as long as it says before the retry', async () => {
        const started = performance.now();
        const waited = await sentFor([{ status: 429, retryAfter: '1' }], () => via().getPlant(1n));
        assert.ok(performance.now() - started >= 950);
        assert.equal(waited.sent.length, 2);
        assert.deepEqual(waited.value, await via().getPlant(1n));
      });

      it('does not wait longer than maxDelayMs: the error carries Retry-After for the caller', async () => {
        const refused = await sentFor([{ status: 503, retryAfter: '3600' }], () => via().getPlant(1n));
        assert.equal(refused.sent.length, 1);
        assert.ok(refused.error instanceof PlantStoreError);
        assert.equal(refused.error.retryAfter, 3600);
      });
    });

    describe('an AbortSignal and a per-attempt timeout; never a retry after an abort', () => {
      it('times out an attempt that gets no answer, and retries it when safe', async () => {
        const once = await sentFor(['hang'], () => via({ retries: 0, timeoutMs: 300 }).getPlant(1n));
        assert.equal((once.error as Error).name, 'TimeoutError');
        assert.equal(once.sent.length, 1);
        const retried = await sentFor(['hang', 'hang'], () => via({ retries: 2, timeoutMs: 1500 }).getPlant(1n));
        assert.equal(retried.sent.length, 3);
        assert.deepEqual((retried.value as { plant: unknown }).plant, { name: 'Aloe', tag: 'x' });
      });

      it('rejects with the abort reason while waiting for an answer, and sends nothing more', async () => {
        const aborted = await sentFor(['hang'], () => via().getPlant(1n, { signal: AbortSignal.timeout(200) }));
        assert.equal((aborted.error as Error).name, 'TimeoutError');
        assert.equal(aborted.sent.length, 1);
        const controller = new AbortController();
        const reason = new Error('changed my mind');
        setTimeout(() => controller.abort(reason), 200);
        const byReason = await sentFor(['hang'], () => via().getPlant(1n, { signal: controller.signal }));
        assert.equal(byReason.error, reason);
        assert.equal(byReason.sent.length, 1);
      });

      it('stops waiting out a Retry-After at once when aborted', async () => {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), 200);
        const started = performance.now();
        const aborted = await sentFor([{ status: 503, retryAfter: '10' }], () =>
          via().getPlant(1n, { signal: controller.signal }),
        );
        assert.ok(performance.now() - started < 8000);
        assert.equal((aborted.error as Error).name, 'AbortError');
        assert.equal(aborted.sent.length, 1);
      });

      it('sends nothing with a signal already aborted', async () => {
        const aborted = await sentFor([], () => via().addPlant({ id: 3n, name: 'x' }, { signal: AbortSignal.abort() }));
        assert.equal((aborted.error as Error).name, 'AbortError');
        assert.equal(aborted.sent.length, 0);
      });
    });
  });
}
