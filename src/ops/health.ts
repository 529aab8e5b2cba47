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
      if (app.isStopping())
        throw new HttpError(503, 'server is stopping; retry on another instance', { 'retry-after': '1' });
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

export const health = fp(healthPlugin, { name: 'health', dependencies: ['graceful-stop'] });
