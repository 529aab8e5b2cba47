import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
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
    requireScope(scope: Scope): onRequestAsyncHookHandler;
  }
}

export type Verifier = (token: string) => Promise<Caller>;

export interface BearerOptions {
  apiToken: Verifier;
  /** Present only when JWTs are configured. */
  jwt?: Verifier;
}

const BEARER = /^bearer +([\x21-\x7e]+) *$/i;
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/;

async function authenticate(request: FastifyRequest, verifiers: BearerOptions): Promise<Caller> {
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
  app.decorate('requireScope', (scope: Scope): onRequestAsyncHookHandler => async (request) => {
    const caller = await authenticate(request, verifiers);
    request.caller = caller;
    if (!caller.scopes.has(scope)) throw insufficientScope(scope);
  });
}

export default fp(bearerPlugin, { name: 'bearer-auth' });
