import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { CommitNotices } from '../storage/commit-notices.js';
import type { Storage } from '../storage/types.js';
import type { AddressGuard } from './address-guard.js';
import { Deliverer } from './deliverer.js';
import { apiSaturation, DeliveryThread } from './delivery-thread.js';
import { AttemptCounts } from './attempt-counts.js';
import type { DeliverySettings } from './delivery-types.js';
import { reportAttemptsOf, reportBacklogOf } from './metrics.js';

/**
 * The deliverer of this process: in a thread of its own (delivery-thread.ts) unless no other
 * thread can reach the store (`sqlite::memory:`), then on the event loop. It starts once the
 * server listens (an app only injected into, as in some tests, sends nothing), stops claiming when
 * the app begins to close, and has let its attempts finish by the time the app is closed (before
 * the store is). Each commit of this process that wrote events wakes it (`commits`).
 */
async function deliveryPlugin(
  app: FastifyInstance,
  {
    storage,
    commits,
    guard,
    ...settings
  }: DeliverySettings & { storage: Storage; commits: CommitNotices; guard: AddressGuard },
) {
  const attempts = new AttemptCounts();
  const deliverer =
    storage.deliverySource === null
      ? new Deliverer(storage, { ...settings, guard, log: app.log, attempts, apiBusy: apiSaturation(app.server) })
      : new DeliveryThread(storage.deliverySource, {
          settings,
          allowPrivate: guard.allowPrivate,
          log: app.log,
          attempts,
          server: app.server,
        });
  commits.listen(deliverer.poke.bind(deliverer));
  reportBacklogOf(storage);
  reportAttemptsOf(attempts);
  let stopped: Promise<void> = Promise.resolve();
  app.addHook('onListen', async () => deliverer.start());
  app.addHook('preClose', async () => {
    stopped = deliverer.stop();
  });
  app.addHook('onClose', async () => {
    await stopped;
    reportBacklogOf(null);
    reportAttemptsOf(null);
  });
}

export const webhookDelivery = fp(deliveryPlugin, { name: 'webhook-delivery' });
