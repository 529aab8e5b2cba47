import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { requireJsonBody } from '../http/intake.js';
import { errorResponses, TAGS } from '../http/route-docs.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import { LIMITS } from '../limits.js';
import { NewPlants, Plants } from '../schemas.js';
import type { PlantService } from './service.js';

/** `POST /plants/batch`: many plants in one request, all or nothing; the rate limit counts it once. */
export function batchRoute(fastify: FastifyInstance, plants: PlantService) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/plants/batch',
    {
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:write' },
      bodyLimit: LIMITS.batchBodyBytes,
      preParsing: requireJsonBody,
      schema: {
        operationId: 'addPlants',
        tags: [TAGS.plants],
        summary: 'Creates many plants at once, all or nothing',
        description:
          `Needs the plants:write scope. Body: a JSON array of 1 to ${LIMITS.batchItems} NewPlant ` +
          '(application/json or application/*+json), at most 1 MiB. Each item is judged as POST /plants judges one: ' +
          'the first bad item makes the whole request a 400 naming its index ([3].name); two items with the same id ' +
          'and different content, a 400 naming the later one; an item whose id the account holds with a different ' +
          'value in any field, a 409 naming its index. The whole array is judged before any stored plant is compared. ' +
          'In each case nothing is stored. Items repeating a stored plant exactly are safe retries, so re-sending ' +
          'a whole batch is safe. A 200 means every plant is durably stored (one transaction); one plant.created ' +
          'event per newly stored plant. The rate limit counts the request once.',
        body: NewPlants,
        response: {
          200: { description: 'The stored plants, one per item, in the request order', ...Plants },
          ...errorResponses(400, 401, 403, 409, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request) => plants.createMany(request.account, request.body, request.deadline),
  );
}
