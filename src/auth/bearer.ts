import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { apartFromDeadline } from '../http/request-deadline.js';
import { authFailures } from '../telemetry/metrics.js';
import { TOKEN_PREFIX } from './api-tokens.js';
import { AuthError, insufficientScope, invalidToken, missingCredentials } from './errors.js';
import { FailureLimit } from './failure-limit.js';
import type { Caller, Scope } from './scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who sent the request, once authenticated; null on the routes that need no token. */
    caller: Caller | null;
    /** The caller's account: set before anything else of a route that declares a `scope` runs. */
    account: string;
  }
  interface FastifyContextConfig {
    /** The scope the route needs: its requests are authenticated and authorized first (one onRequest hook). */
    scope?: Scope;
  }
  interface FastifyInstance {
    /**
     * The request's token checked again now (a long-lived answer, the change feed, asks every
     * moment): its caller, or a throw or rejection when it has since been revoked or has expired.
     */
    recheckCaller(request: FastifyRequest): Caller | Promise<Caller>;
  }
}

/**
 * A caller at once when the answer is known in memory, else a promise of one; throws (or rejects)
 * with a 401. `mayLookUp` says whether a token this process does not know to be good may still be
 * looked up: not while the client is over its limit of failed authentications. A lookup in the
 * store waits no longer than `deadline` (the request's: http/request-deadline.ts), when there is one.
 */
export type Verifier = (
  token: string,
  mayLookUp: () => boolean,
  deadline: AbortSignal | null,
) => Caller | Promise<Caller>;

export interface BearerOptions {
  apiToken: Verifier;
  /** Present only when JWTs are configured. */
  jwt?: Verifier;
  /** `--auth-failure-limit`: 401s per minute per client address before 429; 0 is off. */
  failureLimit: number;
}

const BEARER = /^bearer +([\x21-\x7e]+) *$/i;
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

function bearerToken(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header === undefined)
    throw missingCredentials('missing Authorization header; send "Authorization: Bearer <token>"');
  const token = BEARER.exec(header)?.[1];
  if (token === undefined) throw missingCredentials('malformed Authorization header; expected "Bearer <token>"');
  return token;
}

/**
 * For a rule that needs a scope beyond its route's, known only once the request is read (an
 * endpoint that will receive plants): the 403 the hook gives, counted alike. After the hook.
 */
export function requireScope(request: FastifyRequest, scope: Scope): void {
  if (request.caller?.scopes.has(scope)) return;
  authFailures.inc({ reason: 'insufficient_scope' });
  throw insufficientScope(scope);
}

function authenticate(token: string, verifiers: BearerOptions, mayLookUp: () => boolean, deadline: AbortSignal | null) {
  if (token.startsWith(TOKEN_PREFIX)) return verifiers.apiToken(token, mayLookUp, deadline);
  if (verifiers.jwt && JWT_SHAPE.test(token)) return verifiers.jwt(token, mayLookUp, deadline);
  throw invalidToken('unknown token');
}

async function bearerPlugin(app: FastifyInstance, options: BearerOptions) {
  const failures = options.failureLimit > 0 ? new FailureLimit(options.failureLimit) : undefined;

  /** What a refused request is answered, counted by reason: a 401 beyond the client's limit becomes a 429. */
  function refusal(request: FastifyRequest, error: unknown): Error {
    // Anything else (the identity provider or the store unreachable) is not the client's failure.
    if (!(error instanceof AuthError)) return error as Error;
    const tooMany = error.statusCode === 401 ? failures?.fail(request.ip) : undefined;
    authFailures.inc({ reason: tooMany === undefined ? error.reason : 'too_many_failures' });
    return tooMany ?? error;
  }

  app.decorateRequest('caller', null);
  app.decorateRequest('account', '');
  // A recheck of a stream's token is past its request's deadline: the store bounds each of its calls.
  app.decorate('recheckCaller', (request: FastifyRequest) =>
    authenticate(bearerToken(request), options, () => true, null),
  );
  // Callback-style: most requests carry a token checked in the last moment, answered without a promise.
  const requireScope =
    (scope: Scope): onRequestHookHandler =>
    (request, _reply, done) => {
      const refuse = (error: unknown) => done(refusal(request, error));
      const authorize = (caller: Caller) => {
        request.caller = caller;
        request.account = caller.account;
        if (caller.scopes.has(scope)) done();
        else refuse(insufficientScope(scope));
      };
      let token: string;
      let caller: Caller | Promise<Caller>;
      try {
        token = bearerToken(request);
        const mayLookUp = () => failures === undefined || !failures.isOver(request.ip);
        caller = authenticate(token, options, mayLookUp, request.deadline);
      } catch (error) {
        return refuse(error);
      }
      if (!(caller instanceof Promise)) return authorize(caller);
      // A JWT's wait is on its identity provider: not the database's time.
      (token.startsWith(TOKEN_PREFIX) ? caller : apartFromDeadline(request, caller)).then(authorize, refuse);
    };
  // A route that declares a scope gets the check as its first onRequest hook (after the app's, and
  // after the start of its deadline: http/request-deadline.ts).
  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope;
    if (scope === undefined) return;
    // A new array: Fastify copies a GET route's options for its HEAD route, and each checks once.
    const own = route.onRequest === undefined ? [] : [route.onRequest].flat();
    route.onRequest = [requireScope(scope), ...own];
  });
}

export default fp(bearerPlugin, { name: 'bearer-auth' });
