import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { httpDuration } from './metrics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The route to count a request under when Fastify matched none: a 405 names its path's route. */
    metricsRoute: string | null;
  }
}

const CLIENT_REQUEST_ID = /^[\w.:@-]{1,128}$/;

/** Secrets a client put in the URL by mistake (`?access_token=...`): API tokens, JWTs, access_token values. */
const SECRET_IN_URL = /pst_[\w-]+|eyJ[\w-]*\.[\w-]*\.[\w-]*|(?<=[?&]access_token=)[^&#]*/g;
const LOOKS_SECRET = /pst_|eyJ/;

/** A client's `X-Request-Id` when it is sane (no log injection, no token by mistake), else a fresh UUID. */
export function requestId(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && CLIENT_REQUEST_ID.test(given) && !LOOKS_SECRET.test(given) ? given : randomUUID();
}

/** The request URL as logged: tokens never reach the logs, wherever the client put them. */
export function loggableUrl(url: string): string {
  return url.replace(SECRET_IN_URL, '[redacted]');
}

function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? request.metricsRoute ?? 'unmatched';
}

export interface ObservabilityOptions {
  /** With traces on: the trace id of a request, added to its log line. */
  traceIdOf?: (request: FastifyRequest) => string | undefined;
}

/** One JSON log line and the HTTP metrics for every request; the request id echoed back. */
async function observabilityPlugin(app: FastifyInstance, { traceIdOf }: ObservabilityOptions) {
  app.decorateRequest('metricsRoute', null);
  // Callback-style hooks: an async hook costs a promise and a microtask on every request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request);
    const elapsedMs = reply.elapsedTime;
    httpDuration.of(request.method, route, String(reply.statusCode)).observe(elapsedMs / 1000);
    request.log.info(
      {
        method: request.method,
        route,
        url: loggableUrl(request.url),
        status: reply.statusCode,
        account: request.caller?.account,
        durationMs: Math.round(elapsedMs * 100) / 100,
        // undefined (so no field: pino leaves it out) when traces are off.
        traceId: traceIdOf?.(request),
      },
      'request',
    );
    done();
  });
}

export const observability = fp(observabilityPlugin, { name: 'observability' });
