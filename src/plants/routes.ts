import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest, preParsingHookHandler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { HttpError } from '../errors.js';
import { isJsonContentType } from '../http/json-body.js';
import { errorResponses, TAGS } from '../http/openapi.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import { ListQuery, NewPlant, Plant, Plants } from '../schemas.js';
import type { Page, PlantService } from './service.js';

const serializePlant = fastJson(Plant);

/** The plants as the elements of a JSON array, without the brackets. */
function jsonElements(plants: Plant[]): string {
  return plants.map((plant) => serializePlant(plant)).join(',');
}

/** The JSON text of the pages the service's cache hands out again, so they are serialized once. */
const sharedPageBodies = new WeakMap<Page, string>();

function pageBody(page: Page): string {
  let body = page.shared ? sharedPageBodies.get(page) : undefined;
  if (body === undefined) {
    body = `[${jsonElements(page.plants)}]`;
    if (page.shared) sharedPageBodies.set(page, body);
  }
  return body;
}

/** The whole list as one JSON array, written chunk by chunk as rows come from storage. */
async function* jsonArray(chunks: AsyncIterable<Plant[]>): AsyncIterable<string> {
  let separator = '';
  yield '[';
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    yield separator + jsonElements(chunk);
    separator = ',';
  }
  yield ']';
}

function nextLink(request: FastifyRequest, limit: number, cursor: string): string {
  return `<${request.protocol}://${request.host}/plants?limit=${limit}&cursor=${cursor}>; rel="next"`;
}

const requireJson: preParsingHookHandler = (request, _reply, payload, done) => {
  if (isJsonContentType(request.headers['content-type'])) done(null, payload);
  else done(new HttpError(415, 'Content-Type must be application/json (or application/*+json)'));
};

export async function plantRoutes(app: FastifyInstance, { plants }: { plants: PlantService }) {
  app.post<{ Body: NewPlant }>(
    '/plants',
    {
      config: ACCOUNT_RATE_LIMITED,
      onRequest: app.requireScope('plants:write'),
      preParsing: requireJson,
      schema: {
        operationId: 'addPlant',
        tags: [TAGS.plants],
        summary: 'Creates a new plant in the store',
        description:
          'Needs the plants:write scope. Body: JSON (application/json or application/*+json), at most 16 KiB. ' +
          'No type coercion. Re-sending the same id with the same name and tag is a safe retry (200, nothing duplicated). ' +
          'A 200 means the plant is durably stored.',
        body: NewPlant,
        response: {
          200: { description: 'The stored plant', $ref: 'Plant#' },
          ...errorResponses(400, 401, 403, 409, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request) => plants.create(request.caller!.account, request.body),
  );

  app.get<{ Querystring: ListQuery }>(
    '/plants',
    {
      config: ACCOUNT_RATE_LIMITED,
      onRequest: app.requireScope('plants:read'),
      schema: {
        operationId: 'listPlants',
        tags: [TAGS.plants],
        summary: 'Returns all plants from the system that the user has access to',
        description:
          "Needs the plants:read scope. Only the caller's account's plants, in ascending id order. " +
          'Without limit, the whole list is streamed. With limit, when more plants remain, ' +
          'a Link header with rel="next" gives the URL of the next page.',
        querystring: ListQuery,
        response: {
          200: {
            description: 'The plants, ascending by id',
            headers: { Link: { type: 'string', description: '<URL>; rel="next" when more plants remain' } },
            ...Plants,
          },
          ...errorResponses(400, 401, 403, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { account } = request.caller!;
      const { limit, cursor } = request.query;
      if (limit === undefined)
        return reply.type('application/json').send(Readable.from(jsonArray(plants.all(account, cursor))));
      const page = await plants.page(account, limit, cursor);
      if (page.next !== null) reply.header('link', nextLink(request, limit, page.next));
      return reply.type('application/json').send(pageBody(page));
    },
  );
}
