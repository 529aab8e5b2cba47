import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import { answerWithin } from '../deadline.js';
import { databaseTimedOut } from '../storage/unavailable.js';

/**
 * The contract's bound on a request that needs the database: answered within `--database-timeout`
 * (plus 1 s), 503 otherwise. The store bounds each of its calls by the timeout
 * (storage/postgres/bounded.ts), but one request can wait on several, one after another: its
 * token's lookup, a place in the group commit behind a commit still waiting, then its own commit.
 * Here a route's handler gets what authentication's wait on the store left of the timeout
 * (`storeWaitedMs`, itself bounded by it: auth/api-token-verifier.ts; a JWT's wait on its identity
 * provider is not the store's). The time a client takes to send its body lies between the two, and
 * is not counted: it is not the database's. A handler whose work ends after its 503 was sent goes
 * on to nothing: what it sends is dropped, with Fastify's warning that the reply was already sent.
 *
 * Only the routes that declare a `scope` wait on the store. An answer that has begun (a streamed
 * list, the change feed) is past the bound: what follows is bounded page by page by the store.
 */
export function storeDeadline(app: FastifyInstance, timeoutMs: number): void {
  app.addHook('onRoute', (route) => {
    if (route.config?.scope === undefined) return;
    const handler = route.handler;
    route.handler = function boundedHandler(this: FastifyInstance, request, reply) {
      const answer = Promise.resolve(handler.call(this, request, reply));
      const late = () => (reply.sent || reply.raw.headersSent ? null : databaseTimedOut(timeoutMs));
      return answerWithin(answer, Math.max(0, timeoutMs - request.storeWaitedMs), late);
    } as RouteHandlerMethod;
  });
}
