import type {
  FastifyInstance,
  FastifyRequest,
  onRequestHookHandler,
  onResponseHookHandler,
  preHandlerHookHandler,
  preParsingHookHandler,
} from 'fastify';
import { databaseTimedOut } from '../storage/unavailable.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The request's deadline on the database, passed down to every wait on it (the token's lookup,
     * the group commit, the store's calls): aborted, with the 503 as its reason, once the request
     * has waited `--database-timeout` in all. Null where there is none (SQLite; routes without a scope).
     */
    deadline: AbortSignal | null;
  }
}

/**
 * A request's time on the database: it runs while the request waits on the store (authentication,
 * then its handler) and stops while the client sends its body, which is not the database's time.
 */
class StoreClock {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  private timer: NodeJS.Timeout | null = null;
  private since = 0;
  private leftMs: number;

  constructor(private readonly timeoutMs: number) {
    this.leftMs = timeoutMs;
  }

  run(): void {
    if (this.timer !== null || this.signal.aborted) return;
    this.since = performance.now();
    const abort = () => this.controller.abort(databaseTimedOut(this.timeoutMs));
    // Unref'd: a request left behind (its client gone before any answer) keeps no stopping process alive.
    this.timer = setTimeout(abort, Math.max(0, this.leftMs)).unref();
  }

  pause(): void {
    if (this.timer === null) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.leftMs -= performance.now() - this.since;
  }
}

/** Each request's clock, while it has one. */
const clocks = new WeakMap<FastifyRequest, StoreClock>();

/**
 * `wait`, the request's clock stopped meanwhile: for a wait that is not on the database (a JWT's on
 * its identity provider, bounded by its own timeout), which must not spend the database's time.
 */
export function apartFromDeadline<T>(request: FastifyRequest, wait: Promise<T>): Promise<T> {
  const clock = clocks.get(request);
  if (clock === undefined) return wait;
  clock.pause();
  return wait.finally(() => clock.run());
}

/**
 * The contract's bound on a request that needs the database: answered within `--database-timeout`
 * (plus 1 s), 503 otherwise. One request can wait on the store several times, one after another (its
 * token's lookup, a place in the group commit behind a commit still waiting, then its own commit),
 * so the bound is the request's, not each call's: one signal, `request.deadline`, that every wait
 * races. When it aborts, the wait throws its reason (the 503) into the handler, which answers it as
 * any error: the handler's is the only answer, and nothing is sent after it. What the abandoned
 * wait was doing stops where it can: a change still queued for the group commit is dropped.
 *
 * Only the routes that declare a `scope` wait on the store. An answer that has begun (a streamed
 * list, the change feed) is past the bound: what follows is bounded page by page by the store.
 */
export function requestDeadline(app: FastifyInstance, timeoutMs: number | undefined): void {
  app.decorateRequest('deadline', null);
  if (timeoutMs === undefined) return;
  const start: onRequestHookHandler = (request, _reply, done) => {
    const clock = new StoreClock(timeoutMs);
    clocks.set(request, clock);
    request.deadline = clock.signal;
    clock.run();
    done();
  };
  const pause: preParsingHookHandler = (request, _reply, payload, done) => {
    clocks.get(request)?.pause();
    done(null, payload);
  };
  const run: preHandlerHookHandler = (request, _reply, done) => {
    clocks.get(request)?.run();
    done();
  };
  const stop: onResponseHookHandler = (request, _reply, done) => {
    clocks.get(request)?.pause();
    done();
  };
  app.addHook('onRoute', (route) => {
    if (route.config?.scope === undefined) return;
    // First of each: the clock runs from before authentication (bearer.ts's hook) to the answer.
    route.onRequest = [start, ...(route.onRequest === undefined ? [] : [route.onRequest].flat())];
    route.preParsing = [pause, ...(route.preParsing === undefined ? [] : [route.preParsing].flat())];
    route.preHandler = [run, ...(route.preHandler === undefined ? [] : [route.preHandler].flat())];
    route.onResponse = [stop, ...(route.onResponse === undefined ? [] : [route.onResponse].flat())];
  });
}
