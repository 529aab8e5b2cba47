import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { WebhookStorage } from '../storage/types/webhooks.js';
import { apiSaturation } from './api-load.js';
import { Deliverer, type DelivererOptions } from './deliverer.js';
import { reportBacklogOf } from './metrics.js';

/**
 * The deliverer of this process: it starts once the server listens (an app only injected into,
 * as in some tests, sends nothing), stops claiming when the app begins to close, and has let
 * its attempts finish by the time the app is closed (before the store is).
 */
async function deliveryPlugin(
  app: FastifyInstance,
  { storage, ...options }: Omit<DelivererOptions, 'log' | 'apiBusy'> & { storage: WebhookStorage },
) {
  const deliverer = new Deliverer(storage, { ...options, log: app.log, apiBusy: apiSaturation(app.server) });
  reportBacklogOf(storage);
  let stopped: Promise<void> = Promise.resolve();
  app.addHook('onListen', async () => deliverer.start());
  app.addHook('preClose', async () => {
    stopped = deliverer.stop();
  });
  app.addHook('onClose', async () => {
    await stopped;
    reportBacklogOf(null);
  });
}

export const webhookDelivery = fp(deliveryPlugin, { name: 'webhook-delivery' });
