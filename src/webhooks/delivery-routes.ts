import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { errorResponses } from '../http/route-docs.js';
import { common, route, withBody } from './route-options.js';
import {
  DELIVERIES_LIMIT,
  DeliveriesQuery,
  RecoverRequest,
  RecoverResult,
  WebhookDeliveries,
  WebhookIdParams,
} from './schemas.js';
import type { WebhookService } from './service.js';

/** An endpoint's deliveries: the listing, and sending a window of failed events again. */
export function deliveryRoutes(fastify: FastifyInstance, webhooks: WebhookService) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
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
    async (request) =>
      webhooks.deliveries(
        request.account,
        request.params.id,
        request.query.limit ?? DELIVERIES_LIMIT.default,
        request.deadline,
      ),
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
          '[since, until) is queued again, as it was, with its original webhook-id, and a fresh retry schedule. ' +
          'until, when given, must be later than since (else 400 naming until).',
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
      const queued = await webhooks.recover(request.account, request.params.id, { since, until }, request.deadline);
      return reply.code(202).send({ queued });
    },
  );
}
