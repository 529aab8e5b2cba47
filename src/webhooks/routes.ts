import { Type, type TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { requireJsonBody } from '../http/json-body.js';
import { errorResponses, NoContent, TAGS } from '../http/openapi.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import {
  DeliveriesQuery,
  NewWebhookEndpoint,
  RecoverRequest,
  RecoverResult,
  WebhookDeliveries,
  WebhookEndpoint,
  WebhookEndpointPatch,
  WebhookEndpoints,
  WebhookEndpointWithSecret,
  WebhookIdParams,
} from './schemas.js';
import type { WebhookService } from './service.js';

const common = { tags: [TAGS.webhooks] };

/**
 * The /webhooks API. Typed from its schemas (the TypeBox type provider): a handler's input is what
 * its schemas declare, and it can answer only a declared status with the declared shape.
 */
export async function webhookRoutes(fastify: FastifyInstance, { webhooks }: { webhooks: WebhookService }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const route = { config: { ...ACCOUNT_RATE_LIMITED, scope: 'webhooks:manage' as const } };
  const withBody = { ...route, preParsing: requireJsonBody };

  app.post(
    '/webhooks',
    {
      ...withBody,
      schema: {
        ...common,
        operationId: 'createWebhook',
        summary: 'Registers a webhook endpoint',
        description:
          'Needs webhooks:manage. The answer holds the signing secret, shown only here. At most 16 endpoints per account. ' +
          'The URL must be https and resolve only to public addresses (checked again at each delivery).',
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
      const created = await webhooks.create(request.account, request.body);
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
    async (request) => webhooks.list(request.account),
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
    async (request) => webhooks.get(request.account, request.params.id),
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
          'Needs webhooks:manage. A new url is checked as at registration. enabled: false stops deliveries and fails the ' +
          'pending ones (recover them after enabling it again); true resumes deliveries, also after a 410 disabled it.',
        params: WebhookIdParams,
        body: WebhookEndpointPatch,
        response: {
          200: Type.Ref(WebhookEndpoint, { description: 'The endpoint as it is now' }),
          ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request) => webhooks.update(request.account, request.params.id, request.body),
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
      await webhooks.remove(request.account, request.params.id);
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
    async (request) => webhooks.rotateSecret(request.account, request.params.id),
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      ...route,
      schema: {
        ...common,
        operationId: 'listWebhookDeliveries',
        summary: "The endpoint's deliveries, newest first",
        description: 'Needs webhooks:manage. Delivered and failed ones are kept for the retention (7 days by default).',
        params: WebhookIdParams,
        querystring: DeliveriesQuery,
        response: {
          200: { description: 'Newest first', ...WebhookDeliveries },
          ...errorResponses(400, 401, 403, 404, 429, 500, 503),
        },
      },
    },
    async (request) => webhooks.deliveries(request.account, request.params.id, request.query.limit!),
  );

  app.post(
    '/webhooks/:id/recover',
    {
      ...withBody,
      schema: {
        ...common,
        operationId: 'recoverWebhookDeliveries',
        summary: 'Sends the failed events of a time window again',
        description:
          "Needs webhooks:manage. After a receiver's outage: every failed event of this endpoint that happened in " +
          '[since, until) is queued again, as it was, with its original webhook-id, and a fresh retry schedule.',
        params: WebhookIdParams,
        body: RecoverRequest,
        response: {
          202: Type.Ref(RecoverResult, { description: 'Queued again' }),
          ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { since, until } = request.body;
      const queued = await webhooks.recover(request.account, request.params.id, since, until);
      return reply.code(202).send({ queued });
    },
  );
}
