/**
 * Peer: plain Fastify + postgres.js, as fastify-sqlite.ts but on PostgreSQL: the service's SELECT
 * for a page, one INSERT ... ON CONFLICT DO NOTHING per create (committed on its own, durable
 * with the server's default synchronous_commit), the token looked up on every request.
 * DATABASE_URL=postgres://..., PG_POOL_MAX (the service's --pg-pool-max), PORT.
 */
import Fastify from 'fastify';
import postgres from 'postgres';
import { authorize, bearerHash, nextLink, pageQuery, scopeOf, shown, type TokenRow } from './common.js';

const sql = postgres(process.env.DATABASE_URL!, { max: Number(process.env.PG_POOL_MAX ?? 10) });
const fastify = Fastify({ logger: true });

declare module 'fastify' {
  interface FastifyRequest {
    account: string;
  }
}

interface PlantRow {
  id: string;
  name: string;
  tag: string | null;
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
  const [row] =
    hash === null
      ? []
      : await sql<
          TokenRow[]
        >`SELECT account, scopes, expires_at, revoked_at FROM api_tokens WHERE secret_hash = ${hash}`;
  const outcome = authorize(row, scopeOf(request.method));
  if ('status' in outcome) return reply.code(outcome.status).send({ error: outcome.status, message: 'not allowed' });
  request.account = outcome.account;
});

fastify.get(
  '/plants',
  { schema: { response: { 200: { type: 'array', items: Plant }, 400: ErrorBody } } },
  async (request, reply) => {
    const query = pageQuery(request.query as Record<string, string>);
    if (query === null) return reply.code(400).send({ error: 400, message: 'bad limit or cursor' });
    const after = query.after === null ? sql`` : sql`AND id > ${query.after}`;
    const rows = await sql<PlantRow[]>`
    SELECT id, name, tag FROM plants WHERE account = ${request.account} ${after} ORDER BY id LIMIT ${query.limit + 1}`;
    const page = rows.slice(0, query.limit);
    if (rows.length > query.limit) reply.header('link', nextLink(request.headers.host, query.limit, page.at(-1)!.id));
    return page.map(shown);
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
    const tag = plant.tag ?? null;
    // The store's schema wants the searchable copy of the name; the peer stores the name as it is.
    const inserted = await sql`
      INSERT INTO plants (account, id, name, tag, name_folded)
      VALUES (${request.account}, ${plant.id}, ${plant.name}, ${tag}, ${plant.name})
      ON CONFLICT (account, id) DO NOTHING RETURNING id`;
    if (inserted.length === 1) return shown({ name: plant.name, tag });
    const [stored] = await sql<PlantRow[]>`
      SELECT id, name, tag FROM plants WHERE account = ${request.account} AND id = ${plant.id}`;
    if (stored!.name !== plant.name || stored!.tag !== tag)
      return reply.code(409).send({ error: 409, message: 'a different plant has this id' });
    return shown(stored!);
  },
);

await fastify.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
process.on(
  'SIGTERM',
  () =>
    void fastify
      .close()
      .then(() => sql.end({ timeout: 5 }))
      .then(() => process.exit(0)),
);
