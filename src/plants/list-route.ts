import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { JSON_CONTENT_TYPE } from '../errors.js';
import { errorResponses, TAGS } from '../http/route-docs.js';
import { ACCOUNT_RATE_LIMITED } from '../http/rate-limit.js';
import { SelectedPlants } from '../schemas.js';
import { filterOf, ListHeaders, ListQuery } from './list-query.js';
import type { PlantRecord } from '../storage/types/plants.js';
import type { Page } from './page-cache.js';
import { plantJson, selectionOf, type Selection } from './select.js';
import type { ListRequest, PlantService } from './service.js';

/** The response headers of `GET /plants`, as the document states them. */
const listHeaders = {
  Link: {
    type: 'string',
    description:
      '</plants?...&cursor=...>; rel="next" when more plants remain: the next page, relative to the request\'s URL ' +
      '(RFC 8288); its cursor carries the filters and order',
  },
  'X-Total-Count': {
    type: 'integer',
    description: 'With Prefer: count=exact: how many plants match the filters over all pages',
  },
  'Preference-Applied': { type: 'string', description: 'count=exact when X-Total-Count is sent' },
};

/**
 * Whether the `Prefer` request header (RFC 7240) holds `count=exact`. Preferences are separated by
 * commas, their parameters by semicolons; names are case-insensitive and a value may be quoted.
 * A preference the server does not know is ignored, as the RFC asks.
 */
function prefersExactCount(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  for (const preference of [header].flat().join(',').split(',')) {
    const [token = ''] = preference.split(';', 1);
    const [name = '', value = ''] = token.split('=', 2).map((part) => part.trim());
    if (name.toLowerCase() === 'count' && value.replace(/^"(.*)"$/, '$1').toLowerCase() === 'exact') return true;
  }
  return false;
}

// The JSON text of GET /plants, written by hand, each plant as `select` asks (select.ts).

/** The plants as the elements of a JSON array, without the brackets. */
function jsonElements(plants: PlantRecord[], selection: Selection): string {
  return plants.map((plant) => plantJson(plant, selection)).join(',');
}

/**
 * The JSON text of the pages the service's cache hands out again, so they are serialized once. A
 * cached page is kept under its selection (the cache's key holds it), so it has one text.
 */
const sharedPageBodies = new WeakMap<Page, string>();

export function pageBody(page: Page, selection: Selection): string {
  let body = page.shared ? sharedPageBodies.get(page) : undefined;
  if (body === undefined) {
    body = `[${jsonElements(page.plants, selection)}]`;
    if (page.shared) sharedPageBodies.set(page, body);
  }
  return body;
}

/** The whole list as one JSON array, written chunk by chunk as rows come from storage. */
async function* jsonArray(chunks: AsyncIterable<PlantRecord[]>, selection: Selection): AsyncIterable<string> {
  let separator = '';
  yield '[';
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    yield separator + jsonElements(chunk, selection);
    separator = ',';
  }
  yield ']';
}

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
