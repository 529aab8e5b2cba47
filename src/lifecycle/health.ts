import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { HttpError } from '../errors.js';
import { errorResponses, TAGS } from '../http/route-docs.js';
import type { Storage } from '../storage/types.js';
import { metricsText } from '../telemetry/cluster-metrics.js';
import { registry } from '../telemetry/metrics.js';
import { PROBE_ROUTE } from '../telemetry/observability.js';

const Status = Type.Object({ status: Type.String() }, { description: 'OK' });
const METRICS_EXAMPLE =
  '# HELP plant_store_plants_created_total Plants newly stored (idempotent replays not counted)\n' +
  '# TYPE plant_store_plants_created_total counter\nplant_store_plants_created_total 42\n';

/** Liveness, readiness (503 once stopping) and Prometheus metrics; none of them needs a token. */
async function healthPlugin(app: FastifyInstance, { storage }: { storage: Storage }) {
  // No token; the only errors are those of the HTTP layer (and 503 for readiness).
  const open = { tags: [TAGS.operations], security: [] };
  app.get(
    '/healthz',
    {
      config: PROBE_ROUTE,
      schema: {
        ...open,
        operationId: 'checkLiveness',
        summary: 'The process is alive',
        description: 'Answers 200 as long as the process runs, whatever the state of the store: for liveness probes.',
        response: { 200: { ...Status, examples: [{ status: 'ok' }] }, ...errorResponses(408, 431) },
      },
    },
    async () => ({
      status: 'ok',
    }),
  );
  app.get(
    '/readyz',
    {
      config: PROBE_ROUTE,
      schema: {
        ...open,
        operationId: 'checkReadiness',
        summary: 'Storage answers; 503 while stopping or the store is unavailable',
        description:
          'Answers 200 when the store answers, and 503 with Retry-After while the server is stopping, ' +
          'the store cannot be reached, or its disk refuses writes: for readiness probes and load balancers.',
        response: { 200: { ...Status, examples: [{ status: 'ready' }] }, ...errorResponses(408, 431, 503) },
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
    {
      config: PROBE_ROUTE,
      schema: {
        ...open,
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (text format)',
        description:
          'Request counts and durations by route and status, plants created, storage commits and timings, ' +
          'authentication failures, failed calls to dependencies and how long the database has not answered, ' +
          'and the process metrics, in the Prometheus text exposition format. With --workers, 503 with ' +
          "Retry-After when the other workers' metrics do not arrive in time.",
        response: {
          200: {
            description: 'The metrics',
            content: { 'text/plain': { schema: Type.String(), example: METRICS_EXAMPLE } },
          },
          ...errorResponses(408, 431, 503),
        },
      },
    },
    async (_request, reply) => reply.type(registry.contentType).send(await metricsText()),
  );
}

export const health = fp(healthPlugin, { name: 'health', dependencies: ['graceful-stop'] });
