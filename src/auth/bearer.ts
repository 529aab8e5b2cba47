import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { TOKEN_PREFIX } from './api-tokens.js';
import { insufficientScope, invalidToken, missingCredentials } from './errors.js';
import type { Caller, Scope } from './scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
  interface FastifyInstance {
    /** An onRequest hook: bearer token -> `request.caller`, then the scope check. */
    requireScope(scope: Scope): onRequestHookHandler;
  }
}

/** A caller at once when the answer is known in memory, else a promise of one; throws (or rejects) with a 401. */
export type Verifier = (token: string) => Caller | Promise<Caller>;

export interface BearerOptions {
  apiToken: Verifier;
  /** Present only when JWTs are configured. */
  jwt?: Verifier;
}

const BEARER = /^bearer +([\x21-\x7e]+) *$/i;
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

function authenticate(request: FastifyRequest, verifiers: BearerOptions): Caller | Promise<Caller> {
  const header = request.headers.authorization;
  if (header === undefined)
    throw missingCredentials('missing Authorization header; send "Authorization: Bearer <token>"');
  const token = BEARER.exec(header)?.[1];
  if (token === undefined) throw missingCredentials('malformed Authorization header; expected "Bearer <token>"');
  if (token.startsWith(TOKEN_PREFIX)) return verifiers.apiToken(token);
  if (verifiers.jwt && JWT_SHAPE.test(token)) return verifiers.jwt(token);
  throw invalidToken('unknown token');
}

async function bearerPlugin(app: FastifyInstance, verifiers: BearerOptions) {
  app.decorateRequest('caller', null);
  // Callback-style: most requests carry a token checked in the last moment, answered without a promise.
  app.decorate('requireScope', (scope: Scope): onRequestHookHandler => (request, _reply, done) => {
    const authorize = (caller: Caller) => {
      request.caller = caller;
      done(caller.scopes.has(scope) ? undefined : insufficientScope(scope));
    };
    const caller = authenticate(request, verifiers);
    if (caller instanceof Promise) caller.then(authorize, done);
    else authorize(caller);
  });
}

export default fp(bearerPlugin, { name: 'bearer-auth' });
