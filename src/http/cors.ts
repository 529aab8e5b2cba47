import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Every response header a client of this API reads: a browser hides the others from scripts. */
export const EXPOSED_HEADERS = [
  'ETag',
  'Link',
  'Location',
  'Retry-After',
  'X-Total-Count',
  'Preference-Applied',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
].join(', ');

/** The request headers a client of this API sends beside the CORS-safelisted ones. */
export const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'If-Match',
  'If-None-Match',
  'Prefer',
  'Last-Event-ID',
].join(', ');

/** How long a browser may keep a preflight's answer, in seconds. */
const MAX_AGE = '600';

/** A path's methods as `Allow` lists them, or null for a path the API does not have. */
export type MethodsOf = (path: string) => string | null;

/**
 * CORS for the origins of `--cors-origins` (none: this adds nothing). Written here rather than
 * with @fastify/cors, whose answers differ from the contract in three ways: it adds
 * `Vary: Origin` to answers for origins not on the list (which must get none of the CORS
 * headers), its preflight route `OPTIONS *` makes every path known to the router (so an unknown
 * path answered 405 instead of 404), and it refuses an incomplete preflight in plain text rather
 * than with the `Error` body.
 *
 * Tokens are headers, never cookies: no `Access-Control-Allow-Credentials`, ever. A preflight
 * (OPTIONS with `Origin` and `Access-Control-Request-Method` on a known path) is answered here,
 * in the first hook, before the bearer check, the rate limit or the failure limit could see it.
 * Any other request from an allowed origin gets the headers and goes on as it would without CORS;
 * one from another origin gets nothing added.
 */
export function cors(app: FastifyInstance, origins: string[], methodsOf: MethodsOf) {
  if (origins.length === 0) return;
  const any = origins[0] === '*';
  const listed = new Set(origins);

  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const origin = request.headers.origin;
    if (origin === undefined || !(any || listed.has(origin))) return done();
    reply.header('access-control-allow-origin', any ? '*' : origin);
    reply.header('vary', 'Origin');
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    if (request.method !== 'OPTIONS' || request.headers['access-control-request-method'] === undefined) return done();
    const methods = methodsOf(request.url.split('?', 1)[0]!);
    if (methods === null) return done(); // unknown path: the router's 404
    reply
      .code(204)
      .headers({
        'access-control-allow-methods': methods,
        'access-control-allow-headers': ALLOWED_HEADERS,
        'access-control-max-age': MAX_AGE,
      })
      .send();
  });
}
