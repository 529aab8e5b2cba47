import type { FastifyInstance } from 'fastify';
import { HttpError } from '../errors.js';

/**
 * 404 for an unknown path; 405 with `Allow` for a known path and a method it does not have.
 * Fastify answers both with 404, so the known methods of each path are collected as routes register.
 */
export function notFoundOrWrongMethod(app: FastifyInstance) {
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const method of [route.method].flat()) methods.add(method);
    methodsByPath.set(route.url, methods);
  });
  app.setNotFoundHandler(async (request) => {
    const path = request.url.split('?', 1)[0]!;
    const methods = methodsByPath.get(path);
    if (methods === undefined) throw new HttpError(404, `no such path: ${path}`);
    const allow = [...methods].sort().join(', ');
    throw new HttpError(405, `${request.method} is not allowed on ${path}; use ${allow}`, { allow });
  });
}
