import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import { errorResponses } from '../http/openapi.js';
import type { Storage } from '../storage/types.js';
import { metricsText } from './cluster-metrics.js';
import { registry } from './metrics.js';

const Status = Type.Object({ status: Type.String() }, { description: 'OK' });

/** Liveness, readiness (503 once stopping) and Prometheus metrics; none of them needs a token. */
async function healthPlugin(app: FastifyInstance, { storage }: { storage: Storage }) {
  let stopping = false;
  app.addHook('preClose', async () => {
    stopping = true;
    // Node's server.close() drops idle keep-alive sockets at once, racing any request a client is
    // writing on one. Kept open instead, each such request is still answered (Fastify adds
    // `Connection: close` while closing), and truly idle sockets end at the keep-alive timeout.
    app.server.closeIdleConnections = () => {};
  });

  const open = { tags: ['operations'], security: [] };
  app.get(
    '/healthz',
    { schema: { ...open, summary: 'The process is alive', response: { 200: Status } } },
    async () => ({
      status: 'ok',
    }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        ...open,
        summary: 'Storage answers; 503 while stopping',
        response: { 200: Status, ...errorResponses(503) },
      },
    },
    async () => {
      if (stopping) throw new HttpError(503, 'server is stopping; retry on another instance', { 'retry-after': '1' });
      try {
        await storage.ping();
      } catch {
        throw new HttpError(503, 'storage is not reachable', { 'retry-after': '1' });
      }
      return { status: 'ready' };
    },
  );
  app.get(
    '/metrics',
    { schema: { ...open, summary: 'Prometheus metrics (text format)', produces: ['text/plain'] } },
    async (_request, reply) => reply.type(registry.contentType).send(await metricsText()),
  );
}

export const health = fp(healthPlugin, { name: 'health' });
