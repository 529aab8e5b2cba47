import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { JSON_CONTENT_TYPE } from '../errors.js';
import { errorResponses, TAGS } from '../http/route-docs.js';
import { prefersExactCount } from '../http/prefer.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import { SelectedPlants } from '../schemas.js';
import { jsonArray, pageBody } from './json-bodies.js';
import { listHeaders } from './list-headers.js';
import { filterOf, ListHeaders, ListQuery } from './list-query.js';
import { selectionOf } from './select.js';
import type { ListRequest, PlantService } from './service.js';

/**
 * The request's own query with the next cursor: the filters and order go on exactly as the client
 * wrote them. A relative reference (RFC 8288 resolves it against the request's URL), so that no
 * header (Host, X-Forwarded-*) goes into it, and it reaches the next page through any proxy; the
 * query is re-encoded, so nothing in it can end the `<...>`.
 */
function nextLink(request: FastifyRequest, cursor: string): string {
  const query = new URLSearchParams(request.url.slice(request.url.indexOf('?') + 1));
  query.delete('cursor');
  query.append('cursor', cursor);
  return `</plants?${query}>; rel="next"`;
}

function listRequest(query: ListQuery): ListRequest {
  return {
    filter: filterOf(query),
    order: query.sort ?? 'id',
    cursor: query.cursor,
    selection: selectionOf(query.select),
  };
}

/** `GET /plants`: the account's plants, filtered, sorted, paged or streamed, and counted when asked. */
export function listRoute(app: FastifyInstance, plants: PlantService) {
  app.get<{ Querystring: ListQuery }>(
    '/plants',
    {
      config: { ...ACCOUNT_RATE_LIMITED, scope: 'plants:read' },
      schema: {
        operationId: 'listPlants',
        tags: [TAGS.plants],
        summary: 'Returns all plants from the system that the user has access to',
        description:
          "Needs the plants:read scope. Only the caller's account's plants, in ascending id order unless sort says " +
          'otherwise, and only those that match every filter given. Without limit, the whole list is streamed; if the store fails ' +
          'half-way the response is broken off (no closing ]), never ended short. With ' +
          'limit, when more plants remain, a Link header with rel="next" gives the next page, relative to the request URL; the cursor ' +
          'in it carries the filters and order. Prefer: count=exact adds X-Total-Count. select returns only the fields ' +
          'it names of each plant (the id as an exact int64), with every filter, order and page.',
        querystring: ListQuery,
        headers: ListHeaders,
        response: {
          200: {
            description: 'The plants that match, in the order asked; each a Plant, or the fields select names',
            headers: listHeaders,
            ...SelectedPlants,
          },
          ...errorResponses(400, 401, 403, 415, 429, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const { account, deadline } = request;
      const { limit } = request.query;
      const listing = listRequest(request.query);
      // Counted once the cursor has been judged (a refusal carries no count), beside the rows.
      const count = async () => {
        if (!prefersExactCount(request.headers.prefer)) return;
        const total = await plants.count(account, listing.filter, deadline);
        reply.header('x-total-count', String(total)).header('preference-applied', 'count=exact');
      };
      if (limit === undefined) {
        const chunks = plants.all(account, listing);
        await count();
        return reply.type(JSON_CONTENT_TYPE).send(Readable.from(jsonArray(chunks, listing.selection)));
      }
      const page = await plants.page(account, limit, listing, deadline);
      await count();
      if (page.next !== null) reply.header('link', nextLink(request, page.next));
      return reply.type(JSON_CONTENT_TYPE).send(pageBody(page, listing.selection));
    },
  );
}
