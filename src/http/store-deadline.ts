import type { FastifyInstance, FastifyReply, RouteHandlerMethod } from 'fastify';
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
      return answerBefore(answer, timeoutMs - request.storeWaitedMs, timeoutMs, reply);
    } as RouteHandlerMethod;
  });
}

/**
 * `answer`'s outcome, or a 503 once `budgetMs` have passed with nothing sent. What `answer` ends
 * with later is nobody's answer any more, and is dropped, so that it is neither sent nor logged
 * as an error of a request already answered.
 */
function answerBefore<T>(answer: Promise<T>, budgetMs: number, timeoutMs: number, reply: FastifyReply) {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => {
        if (!reply.sent && !reply.raw.headersSent) reject(databaseTimedOut(timeoutMs));
      },
      Math.max(0, budgetMs),
    );
    answer.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
