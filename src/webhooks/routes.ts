import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { requireScope } from '../auth/bearer.js';
import { errorResponses, NoContent } from '../http/route-docs.js';
import {
  NewWebhookEndpoint,
  WebhookEndpoint,
  WebhookEndpointPatch,
  WebhookEndpoints,
  WebhookEndpointWithSecret,
  WebhookIdParams,
} from './schemas.js';
import { deliveryRoutes } from './delivery-routes.js';
import { common, route, withBody } from './route-options.js';
import type { WebhookService } from './service.js';

/**
 * An endpoint receives the account's plants (every event is a plant event), so a token must not
 * get by webhook what it cannot get by GET: registering an endpoint, or changing where it sends
 * (url), what it sends (events) or that it sends (enabled: true), needs plants:read as well.
 * Disabling it or changing its description does not.
 */
const RECEIVES_PLANTS = 'plants:read';
const RECEIVES_PLANTS_NOTE = `${RECEIVES_PLANTS} as well: an endpoint receives plants, and its token must be able to read them.`;

function changesWhatIsReceived(patch: WebhookEndpointPatch): boolean {
  return patch.url !== undefined || patch.events !== undefined || patch.enabled === true;
}

/**
 * The /webhooks API. Typed from its schemas (the TypeBox type provider): a handler's input is what
 * its schemas declare, and it can answer only a declared status with the declared shape. The
 * routes of an endpoint's deliveries are in delivery-routes.ts.
 */
async function webhookRoutesPlugin(fastify: FastifyInstance, { webhooks }: { webhooks: WebhookService }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    '/webhooks',
    {
      ...withBody,
      schema: {
        ...common,
        operationId: 'createWebhook',
        summary: 'Registers a webhook endpoint',
        description:
          `Needs webhooks:manage, and ${RECEIVES_PLANTS_NOTE} ` +
          'The answer holds the signing secret, shown only here. At most 16 endpoints per account. ' +
          'The URL must be https and resolve only to public addresses (checked again at each delivery); a refused ' +
          'URL gets one message that names the rule, never what its host resolves to.',
        body: NewWebhookEndpoint,
        response: {
          201: Type.Ref(WebhookEndpointWithSecret, {
            description: 'Registered; Location is its URL',
            headers: { Location: { type: 'string', description: '/webhooks/{id}' } },
          }),
          ...errorResponses(400, 401, 403, 409, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      requireScope(request, RECEIVES_PLANTS);
      const created = await webhooks.create(request.account, request.body, request.deadline);
      return reply.code(201).header('location', `/webhooks/${created.id}`).send(created);
    },
  );

  app.get(
    '/webhooks',
    {
      ...route,
      schema: {
        ...common,
        operationId: 'listWebhooks',
        summary: "Lists the account's webhook endpoints",
        description: 'Needs webhooks:manage. Oldest first; never a secret.',
        response: {
          200: { description: 'The endpoints', ...WebhookEndpoints },
          ...errorResponses(401, 403, 429, 500, 503),
        },
      },
    },
    async (request) => webhooks.list(request.account, request.deadline),
  );

  app.get(
    '/webhooks/:id',
    {
      ...route,
      schema: {
        ...common,
        operationId: 'getWebhook',
        summary: 'Reads one webhook endpoint',
        description: 'Needs webhooks:manage. Never the secret.',
        params: WebhookIdParams,
        response: {
          200: Type.Ref(WebhookEndpoint, { description: 'The endpoint' }),
          ...errorResponses(400, 401, 403, 404, 429, 500, 503),
        },
      },
    },
    async (request) => webhooks.get(request.account, request.params.id, request.deadline),
  );

  app.patch(
    '/webhooks/:id',
    {
      ...withBody,
      schema: {
        ...common,
        operationId: 'updateWebhook',
        summary: 'Changes url, events, description or enabled',
        description:
          `Needs webhooks:manage; to change url or events or to set enabled: true, ${RECEIVES_PLANTS_NOTE} ` +
          'A new url is checked as at registration. enabled: false stops deliveries and fails the ' +
          'pending ones (recover them after enabling it again); true resumes deliveries, also after a 410 disabled it.',
        params: WebhookIdParams,
        body: WebhookEndpointPatch,
        response: {
          200: Type.Ref(WebhookEndpoint, { description: 'The endpoint as it is now' }),
          ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request) => {
      if (changesWhatIsReceived(request.body)) requireScope(request, RECEIVES_PLANTS);
      return webhooks.update(request.account, request.params.id, request.body, request.deadline);
    },
  );

  app.delete(
    '/webhooks/:id',
    {
      ...route,
      schema: {
        ...common,
        operationId: 'deleteWebhook',
        summary: 'Deletes a webhook endpoint',
        description: 'Needs webhooks:manage. Its pending deliveries are dropped.',
        params: WebhookIdParams,
        response: {
          204: NoContent('Deleted'),
          ...errorResponses(400, 401, 403, 404, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await webhooks.remove(request.account, request.params.id, request.deadline);
      return reply.code(204).send();
    },
  );

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      ...route,
      schema: {
        ...common,
        operationId: 'rotateWebhookSecret',
        summary: 'Replaces the signing secret',
        description:
          'Needs webhooks:manage. The new secret is shown only here. For 24 hours the old secret keeps signing beside the ' +
          'new one: webhook-signature then carries two signatures, so receivers can switch without losing an event.',
        params: WebhookIdParams,
        response: {
          200: Type.Ref(WebhookEndpointWithSecret, { description: 'The endpoint with its new secret' }),
          ...errorResponses(400, 401, 403, 404, 429, 500, 503),
        },
      },
    },
    async (request) => webhooks.rotateSecret(request.account, request.params.id, request.deadline),
  );

  deliveryRoutes(fastify, webhooks);
}

/** Its own context (encapsulated), after the bearer hook that gives each request its account (auth/bearer.ts). */
export const webhookRoutes = fp(webhookRoutesPlugin, {
  name: 'webhook-routes',
  dependencies: ['bearer-auth'],
  encapsulate: true,
});
