import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { toPlant } from '../plant-fields.js';
import { requireJsonBody, requireMergePatchBody } from '../http/intake.js';
import { errorResponses, NoContent, TAGS } from '../http/route-docs.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import { HttpError, JSON_CONTENT_TYPE } from '../errors.js';
import {
  IF_MATCH_PATTERN,
  IfMatchHeaders,
  IfNoneMatchHeaders,
  NewPlant,
  Plant,
  PlantIdParams,
  PlantPatch,
  SelectedPlant,
} from '../schemas.js';
import type { Precondition, StoredPlant } from '../storage/types/plants.js';
import { batchRoute } from './batch-route.js';
import { listRoute } from './list-route.js';
import { plantJson, selectionOf, SelectQuery } from './select.js';
import type { PlantService } from './service.js';

/** A plant's strong ETag: its revision (service.ts), in base 36. */
function etagOf(revision: bigint): string {
  return `"${revision.toString(36)}"`;
}

/** The entity tags of an If-Match or If-None-Match header (RFC 9110 §13.1), or '*'. */
function entityTags(header: string): '*' | { tag: string; weak: boolean }[] {
  if (header.trim() === '*') return '*';
  return [...header.matchAll(/(W\/)?("[^"]*")/g)].map((m) => ({ tag: m[2]!, weak: m[1] !== undefined }));
}

/**
 * Anything but IF_MATCH_PATTERN is a malformed request (400), not a stale tag: answering 412 would
 * send a client to read the plant again and retry with the same broken header.
 */
const IF_MATCH = new RegExp(IF_MATCH_PATTERN);

/** If-Match uses the strong comparison: a weak tag never matches. Undefined when there is no header. */
function ifMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined) return undefined;
  if (!IF_MATCH.test(header)) {
    throw new HttpError(400, 'If-Match must be * or a list of quoted entity tags, as the ETag header gives them');
  }
  const tags = entityTags(header);
  if (tags === '*') return 'any';
  return { revisions: tags.flatMap(({ tag, weak }) => (weak ? [] : revisionsTagged(tag))) };
}

/**
 * The revision whose ETag is exactly `tag`, as a list of none or one: a tag `etagOf` never writes
 * (leading zeros, capitals, not base 36) matches no plant, as when the tags were compared as text.
 */
function revisionsTagged(tag: string): bigint[] {
  const digits = tag.slice(1, -1);
  if (!/^[0-9a-z]{1,13}$/.test(digits)) return [];
  let revision = 0n;
  for (const digit of digits) revision = revision * 36n + BigInt(Number.parseInt(digit, 36));
  return etagOf(revision) === tag ? [revision] : [];
}

/** If-None-Match uses the weak comparison: true when the client's copy is current (answer 304). */
function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const tags = entityTags(header);
  return tags === '*' || tags.some(({ tag }) => tag === etag);
}

const ETAG_HEADER = { ETag: { type: 'string', description: "The plant's strong entity tag" } };
const REVALIDATE_HEADERS = {
  ...ETAG_HEADER,
  'Cache-Control': { type: 'string', description: 'private, no-cache: keep it, but revalidate with If-None-Match' },
};

/** What GET /plants/{id} alone sends: `private, no-cache` (not no-store) so that its ETag can be revalidated. */
const REVALIDATE = 'private, no-cache';

/** One plant as answered, its ETag set on the reply. */
function withEtag(reply: FastifyReply, plant: StoredPlant): Plant {
  reply.header('etag', etagOf(plant.revision));
  return toPlant(plant);
}

/**
 * The plants API. Typed from its schemas (the TypeBox type provider): a handler's input is what its
 * schemas declare, and it can answer only a declared status with the declared shape; the reads
 * (GET /plants and GET /plants/{id}) write their JSON text by hand, as `select` asks (select.ts), so
 * they are declared on the untyped instance.
 */
async function plantRoutesPlugin(fastify: FastifyInstance, { plants }: { plants: PlantService }) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    '/plants',
    {
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:write' },
      preParsing: requireJsonBody,
      schema: {
        operationId: 'addPlant',
        tags: [TAGS.plants],
        summary: 'Creates a new plant in the store',
        description:
          'Needs the plants:write scope. Body: JSON (application/json or application/*+json), at most 16 KiB. ' +
          'No type coercion. Re-sending the same id with the same value in every field is a safe retry (200, nothing duplicated). ' +
          'A 200 means the plant is durably stored. Its ETag is the one GET /plants/{id} answers, for a new ' +
          'plant and a retry alike: an update under If-Match needs no read first.',
        body: NewPlant,
        response: {
          200: Type.Ref(Plant, { description: 'The stored plant, with its ETag', headers: ETAG_HEADER }),
          ...errorResponses(400, 401, 403, 409, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => withEtag(reply, await plants.create(request.account, request.body, request.deadline)),
  );
  batchRoute(fastify, plants);
  listRoute(fastify, plants);

  fastify.get<{ Params: PlantIdParams; Querystring: SelectQuery; Headers: { 'if-none-match'?: string } }>(
    '/plants/:id',
    {
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:read' },
      schema: {
        operationId: 'getPlant',
        tags: [TAGS.plants],
        summary: 'Returns one plant by its id',
        description:
          "Needs the plants:read scope. Only the caller's account's plants: an id the account lacks is a 404, " +
          'whether or not another account has it. The strong ETag changes whenever the plant does; ' +
          'If-None-Match with the current tag answers 304 with no body. select=id,name,tag returns those fields ' +
          '(the id as an exact int64); the ETag is the same whatever select asks.',
        params: PlantIdParams,
        querystring: SelectQuery,
        headers: IfNoneMatchHeaders,
        response: {
          200: Type.Ref(SelectedPlant, {
            description: 'The plant, or the fields select names',
            headers: REVALIDATE_HEADERS,
          }),
          304: NoContent('Not modified: If-None-Match holds the current ETag', REVALIDATE_HEADERS),
          ...errorResponses(400, 401, 403, 404, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const plant = await plants.get(request.account, request.params.id, request.deadline);
      const etag = etagOf(plant.revision);
      if (notModified(request.headers['if-none-match'], etag)) {
        return reply.code(304).header('etag', etag).header('cache-control', REVALIDATE).send();
      }
      const body = plantJson(plant, selectionOf(request.query.select));
      return reply.header('cache-control', REVALIDATE).header('etag', etag).type(JSON_CONTENT_TYPE).send(body);
    },
  );

  app.patch(
    '/plants/:id',
    {
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:write' },
      preParsing: requireMergePatchBody,
      schema: {
        operationId: 'updatePlant',
        tags: [TAGS.plants],
        summary: 'Updates one plant (JSON merge patch)',
        description:
          'Needs the plants:write scope. Body: a JSON merge patch (RFC 7396; application/merge-patch+json or ' +
          "application/json) of the plant's fields: a field absent stays as it is; null removes an optional field; " +
          'a required field cannot be removed; an id in the ' +
          "body must equal the path's. With If-Match, a plant whose current ETag differs is left alone (412). " +
          'Durable before the answer, like a create.',
        params: PlantIdParams,
        headers: IfMatchHeaders,
        consumes: ['application/merge-patch+json', 'application/json'],
        body: PlantPatch,
        response: {
          200: Type.Ref(Plant, { description: 'The updated plant, with its new ETag', headers: ETAG_HEADER }),
          ...errorResponses(400, 401, 403, 404, 412, 413, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { account, deadline } = request;
      const precondition = ifMatch(request.headers['if-match']);
      const plant = await plants.update(account, request.params.id, request.body, precondition, deadline);
      return reply.send(withEtag(reply, plant));
    },
  );

  app.delete(
    '/plants/:id',
    {
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:write' },
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
          204: NoContent('Plant deleted'),
          ...errorResponses(400, 401, 403, 404, 412, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      await plants.remove(request.account, request.params.id, ifMatch(request.headers['if-match']), request.deadline);
      return reply.code(204).send();
    },
  );
}

/** Its own context (encapsulated), after the bearer hook that gives each request its account (auth/bearer.ts). */
export const plantRoutes = fp(plantRoutesPlugin, {
  name: 'plant-routes',
  dependencies: ['bearer-auth'],
  encapsulate: true,
});
