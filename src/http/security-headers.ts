import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import helmet from 'helmet';

/**
 * Helmet's headers, minus upgrade-insecure-requests (the service is often reached over plain
 * HTTP: loopback, behind a proxy). Helmet decides them; they do not depend on the request, so its
 * middleware runs once here, into a plain object, instead of on every request: @fastify/helmet
 * rebuilt it per request, a fifth of the CPU time of a GET /plants. The /docs page replaces the
 * CSP with its own.
 */
function helmetHeaders(): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  const middleware = helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } });
  middleware({} as IncomingMessage, response as unknown as ServerResponse, () => {});
  return Object.freeze(headers);
}

export const SECURITY_HEADERS = helmetHeaders();

export function securityHeaders(app: FastifyInstance) {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    done();
  });
}
