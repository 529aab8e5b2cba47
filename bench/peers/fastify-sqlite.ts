/**
 * Peer: plain Fastify + better-sqlite3, written as Fastify's README and "Getting started" guide
 * suggest (`Fastify({ logger: true })`, JSON schemas for the body and the reply, an onRequest hook
 * for auth). Same SQL and same token check as the service, no cache, no group commit: each create,
 * update (PATCH, a plain UPDATE) and DELETE is its own durable transaction. DATABASE_URL=sqlite:PATH, PORT.
 */
import Fastify from 'fastify';
import { authorize, bearerHash, nextLink, pageQuery, scopeOf, shown } from './common.js';
import { openPlants } from './sqlite.js';

const plants = openPlants(process.env.DATABASE_URL!);
const fastify = Fastify({ logger: true });

declare module 'fastify' {
  interface FastifyRequest {
    account: string;
  }
}

const Plant = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string' }, tag: { type: 'string' } },
} as const;
const ErrorBody = {
  type: 'object',
  properties: { error: { type: 'integer' }, message: { type: 'string' } },
} as const;

fastify.decorateRequest('account', '');
fastify.addHook('onRequest', async (request, reply) => {
  const hash = bearerHash(request.headers.authorization);
  const outcome = authorize(hash === null ? undefined : plants.token(hash), scopeOf(request.method));
  if ('status' in outcome) return reply.code(outcome.status).send({ error: outcome.status, message: 'not allowed' });
  request.account = outcome.account;
});

fastify.get(
  '/plants',
  { schema: { response: { 200: { type: 'array', items: Plant }, 400: ErrorBody } } },
  async (request, reply) => {
    const query = pageQuery(request.query as Record<string, string>);
    if (query === null) return reply.code(400).send({ error: 400, message: 'bad limit or cursor' });
    const rows = plants.page(request.account, query.after, query.limit + 1);
    if (rows.length > query.limit) {
      rows.length = query.limit;
      reply.header('link', nextLink(request.headers.host, query.limit, rows[rows.length - 1]!.id));
    }
    return rows.map(shown);
  },
);

fastify.post(
  '/plants',
  {
    schema: {
      body: {
        type: 'object',
        required: ['id', 'name'],
        properties: {
          id: { type: 'integer' },
          name: { type: 'string', minLength: 1, maxLength: 256 },
          tag: { type: 'string', maxLength: 256 },
        },
      },
      response: { 200: Plant, 409: ErrorBody },
    },
  },
  async (request, reply) => {
    const plant = request.body as { id: number; name: string; tag?: string };
    const { created, stored } = plants.create(request.account, plant);
    if (!created && (stored.name !== plant.name || stored.tag !== (plant.tag ?? null)))
      return reply.code(409).send({ error: 409, message: 'a different plant has this id' });
    return shown(stored);
  },
);

const ById = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'integer' } },
} as const;
const notFound = { error: 404, message: 'no plant with this id' };

// PATCH bodies are JSON merge patches (RFC 7396), as the service takes them.
fastify.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, (_request, body, done) => {
  try {
    done(null, JSON.parse(body as string));
  } catch (error) {
    done(error as Error);
  }
});

fastify.patch(
  '/plants/:id',
  {
    schema: {
      params: ById,
      body: {
        type: 'object',
        properties: { name: { type: 'string', minLength: 1, maxLength: 256 }, tag: { type: 'string', maxLength: 256 } },
      },
      response: { 200: Plant, 404: ErrorBody },
    },
  },
  async (request, reply) => {
    const { id } = request.params as { id: number };
    const stored = plants.update(request.account, id, request.body as { name?: string; tag?: string });
    return stored === undefined ? reply.code(404).send(notFound) : shown(stored);
  },
);

fastify.delete(
  '/plants/:id',
  { schema: { params: ById, response: { 204: { type: 'null' }, 404: ErrorBody } } },
  async (request, reply) => {
    const { id } = request.params as { id: number };
    return plants.remove(request.account, id) ? reply.code(204).send() : reply.code(404).send(notFound);
  },
);

await fastify.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
process.on('SIGTERM', () => void fastify.close().then(() => process.exit(0)));
