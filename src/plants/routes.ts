import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JSON_CONTENT_TYPE } from '../errors.js';
import { requireJsonBody, requireMergePatchBody } from '../http/json-body.js';
import { errorResponses, TAGS } from '../http/openapi.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import {
  IfMatchHeaders,
  IfNoneMatchHeaders,
  ListQuery,
  NewPlant,
  PlantIdParams,
  PlantPatch,
  Plants,
} from '../schemas.js';
import type { StoredPlant } from '../storage/types/plants.js';
import { etagOf, ifMatch, notModified } from './etag.js';
import { jsonArray, pageBody } from './json-bodies.js';
import { toPlant, type PlantService } from './service.js';

function nextLink(request: FastifyRequest, limit: number, cursor: string): string {
  return `<${request.protocol}://${request.host}/plants?limit=${limit}&cursor=${cursor}>; rel="next"`;
}

const ETAG_HEADER = { ETag: { type: 'string', description: "The plant's strong entity tag" } };
const REVALIDATE_HEADERS = {
  ...ETAG_HEADER,
  'Cache-Control': { type: 'string', description: 'private, no-cache: keep it, but revalidate with If-None-Match' },
};

/** What GET /plants/{id} alone sends: `private, no-cache` (not no-store) so that its ETag can be revalidated. */
const REVALIDATE = 'private, no-cache';

/** One plant with its ETag. */
function sendPlant(reply: FastifyReply, plant: StoredPlant) {
  return reply.header('etag', etagOf(plant.revision)).send(toPlant(plant));
}

export async function plantRoutes(app: FastifyInstance, { plants }: { plants: PlantService }) {
  app.post<{ Body: NewPlant }>(
    '/plants',
    {
      config: ACCOUNT_RATE_LIMITED,
      onRequest: app.requireScope('plants:write'),
      preParsing: requireJsonBody,
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
          ...errorResponses(400, 401, 403, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { account } = request.caller!;
      const { limit, cursor } = request.query;
      if (limit === undefined)
        return reply.type(JSON_CONTENT_TYPE).send(Readable.from(jsonArray(plants.all(account, cursor))));
      const page = await plants.page(account, limit, cursor);
      if (page.next !== null) reply.header('link', nextLink(request, limit, page.next));
      return reply.type(JSON_CONTENT_TYPE).send(pageBody(page));
    },
  );

  app.get<{ Params: PlantIdParams }>(
    '/plants/:id',
    {
      config: ACCOUNT_RATE_LIMITED,
      onRequest: app.requireScope('plants:read'),
      schema: {
        operationId: 'getPlant',
        tags: [TAGS.plants],
        summary: 'Returns one plant by its id',
        description:
          "Needs the plants:read scope. Only the caller's account's plants: an id the account lacks is a 404, " +
          'whether or not another account has it. The strong ETag changes whenever the plant does; ' +
          'If-None-Match with the current tag answers 304 with no body.',
        params: PlantIdParams,
        headers: IfNoneMatchHeaders,
        response: {
          200: { description: 'The plant', headers: REVALIDATE_HEADERS, $ref: 'Plant#' },
          304: {
            description: 'Not modified: If-None-Match holds the current ETag',
            headers: REVALIDATE_HEADERS,
            type: 'null',
          },
          ...errorResponses(400, 401, 403, 404, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const plant = await plants.get(request.caller!.account, request.params.id);
      const etag = etagOf(plant.revision);
      if (notModified(request.headers['if-none-match'], etag)) {
        return reply.code(304).header('etag', etag).header('cache-control', REVALIDATE).send();
      }
      return sendPlant(reply.header('cache-control', REVALIDATE), plant);
    },
  );

  app.patch<{ Params: PlantIdParams; Body: PlantPatch }>(
    '/plants/:id',
    {
      config: ACCOUNT_RATE_LIMITED,
      onRequest: app.requireScope('plants:write'),
      preParsing: requireMergePatchBody,
      schema: {
        operationId: 'updatePlant',
        tags: [TAGS.plants],
        summary: 'Updates one plant (JSON merge patch)',
        description:
          'Needs the plants:write scope. Body: a JSON merge patch (RFC 7396; application/merge-patch+json or ' +
          'application/json) of name and/or tag; "tag": null removes the tag; name cannot be removed; an id in the ' +
          "body must equal the path's. With If-Match, a plant whose current ETag differs is left alone (412). " +
          'Durable before the answer, like a create.',
        params: PlantIdParams,
        headers: IfMatchHeaders,
        consumes: ['application/merge-patch+json', 'application/json'],
        body: PlantPatch,
        response: {
          200: { description: 'The updated plant, with its new ETag', headers: ETAG_HEADER, $ref: 'Plant#' },
          ...errorResponses(400, 401, 403, 404, 412, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { account } = request.caller!;
      const precondition = ifMatch(request.headers['if-match']);
      return sendPlant(reply, await plants.update(account, request.params.id, request.body, precondition));
    },
  );

  app.delete<{ Params: PlantIdParams }>(
    '/plants/:id',
    {
      config: ACCOUNT_RATE_LIMITED,
      onRequest: app.requireScope('plants:write'),
      schema: {
        operationId: 'deletePlant',
        tags: [TAGS.plants],
        summary: 'Deletes a single plant based on the ID supplied',
        description:
          'Needs the plants:write scope. Deleting it again is a 404; the id is free again for a later create. ' +
          'With If-Match, a plant whose current ETag differs is left alone (412). Durable before the answer.',
        params: PlantIdParams,
        headers: IfMatchHeaders,
        response: {
          204: { description: 'Plant deleted', type: 'null' },
          ...errorResponses(400, 401, 403, 404, 412, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await plants.remove(request.caller!.account, request.params.id, ifMatch(request.headers['if-match']));
      return reply.code(204).send();
    },
  );
}
