import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import helmet from 'helmet';
import { API_HEADERS } from '../errors.js';

/**
 * Helmet's headers for the HTML of /docs and its assets, where a browser renders them. Without
 * upgrade-insecure-requests (the page is often opened over plain HTTP: loopback, behind a proxy),
 * without Strict-Transport-Security, which belongs to the TLS terminator in front, and without the
 * CSP: the swagger-ui plugin sets the one its page needs. Helmet decides them once here, into a
 * plain object, not on every request.
 */
function helmetHeaders(): Readonly<Record<string, string>> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  const middleware = helmet({ contentSecurityPolicy: false, strictTransportSecurity: false });
  middleware({} as IncomingMessage, response as unknown as ServerResponse, () => {});
  return Object.freeze(headers);
}

export const DOCS_PAGE_HEADERS = helmetHeaders();

function apiHeaders(_request: FastifyRequest, reply: FastifyReply, done: () => void) {
  reply.headers(API_HEADERS);
  done();
}

/**
 * Route-level onSend hooks of the /docs routes: they run after the swagger-ui plugin's own onSend
 * (which sets its page's CSP on all of them), so they have the last word.
 */
const docsPageHeaders: onSendHookHandler = (_request, reply, payload, done) => {
  reply.removeHeader('cache-control');
  reply.headers(DOCS_PAGE_HEADERS);
  done(null, payload);
};
const docsDataHeaders: onSendHookHandler = (_request, reply, payload, done) => {
  reply.headers(API_HEADERS);
  done(null, payload);
};

/** Call before any route is registered: every answer gets the API set, the docs page Helmet's instead. */
export function securityHeaders(app: FastifyInstance) {
  app.addHook('onRequest', apiHeaders);
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/docs')) return;
    // The page and its assets; /docs/json and /docs/yaml are data, as /openapi.json is.
    const page = route.url === '/docs' || route.url === '/docs/' || route.url.startsWith('/docs/static/');
    route.onSend = [...[route.onSend ?? []].flat(), page ? docsPageHeaders : docsDataHeaders];
  });
}
