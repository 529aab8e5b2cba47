import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '../errors.js';

/** How `Allow` lists a path's methods: reads first, then writes, the way the contract writes them. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

function byMethodOrder(a: string, b: string): number {
  const rank = (method: string) => (METHOD_ORDER.includes(method) ? METHOD_ORDER.indexOf(method) : METHOD_ORDER.length);
  return rank(a) - rank(b) || a.localeCompare(b);
}

/**
 * A route's URL as a pattern: `/plants/:id` matches `/plants/` followed by one path segment, and
 * `/docs/static/*` anything below `/docs/static/`.
 */
function pathPattern(url: string): RegExp {
  const escaped = url
    .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
    .replace(/:\w+/g, '[^/]+')
    .replace(/\*/g, '.*');
  return new RegExp(`^${escaped}$`);
}

/** `/plants/` reaches the route `/plants/:id` with an empty id; no path of ours has an empty segment. */
function hasEmptySegment(request: FastifyRequest): boolean {
  const params = request.params as Record<string, string>;
  for (const name in params) if (params[name] === '') return true;
  return false;
}

/**
 * 404 for an unknown path; 405 with `Allow` for a known path and a method it does not have.
 * Fastify answers both with its 404 route, so the methods of each path are collected as routes
 * register. The answer is given in onRequest, before any body is read or its type looked at:
 * routing decides first, whatever the body.
 */
export function notFoundOrWrongMethod(app: FastifyInstance): (path: string) => string | null {
  const paths: { url: string; pattern: RegExp; methods: Set<string> }[] = [];
  app.addHook('onRoute', (route) => {
    let path = paths.find((p) => p.url === route.url);
    if (path === undefined)
      paths.push((path = { url: route.url, pattern: pathPattern(route.url), methods: new Set() }));
    for (const method of [route.method].flat()) path.methods.add(method);
  });

  /** A path's methods as `Allow` lists them, or null when no route has the path. */
  const methodsOf = (path: string): string | null => {
    const known = paths.find((p) => p.pattern.test(path));
    return known === undefined ? null : [...known.methods].sort(byMethodOrder).join(', ');
  };

  const routingError = (request: FastifyRequest): HttpError => {
    const path = request.url.split('?', 1)[0]!;
    // A path of its own (`/plants/batch`) before a pattern that also matches it (`/plants/:id`).
    const known = paths.find((p) => p.url === path) ?? paths.find((p) => p.pattern.test(path));
    if (known === undefined) return new HttpError(404, `no such path: ${path}`);
    request.metricsRoute = known.url;
    const allow = methodsOf(path)!;
    return new HttpError(405, `${request.method} is not allowed on ${path}; use ${allow}`, { allow });
  };

  /** `GET /plants/batch` reaches `/plants/:id`, but the path is `/plants/batch`'s, which has no GET. */
  const shadowed = (request: FastifyRequest): boolean => {
    const route = request.routeOptions.url;
    if (route === undefined || !route.includes(':')) return false;
    const path = request.url.split('?', 1)[0]!;
    return paths.some((p) => p.url === path);
  };

  app.addHook('onRequest', (request, _reply, done) =>
    done(request.is404 || hasEmptySegment(request) || shadowed(request) ? routingError(request) : undefined),
  );
  // A route that finds nothing to serve after all (a missing file under /docs/static/) ends here.
  app.setNotFoundHandler(async (request) => {
    throw new HttpError(404, `no such path: ${request.url.split('?', 1)[0]}`);
  });
  return methodsOf;
}
