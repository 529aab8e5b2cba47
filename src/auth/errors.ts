import { HttpError, REALM } from '../errors.js';

/** Why a request was refused by authentication or authorization: the `reason` label of the metric. */
export type AuthFailure = 'missing' | 'invalid_token' | 'insufficient_scope';

/** A 401 or 403 that knows its reason; the bearer hook counts it (and the failure limit, a 401). */
export class AuthError extends HttpError {
  constructor(
    readonly reason: AuthFailure,
    statusCode: 401 | 403,
    message: string,
    headers: Record<string, string>,
  ) {
    super(statusCode, message, headers);
  }
}

/** The three ways a request can fail authentication, with their RFC 6750 challenges. */

export function missingCredentials(message: string): AuthError {
  return new AuthError('missing', 401, message, { 'www-authenticate': REALM });
}

export function invalidToken(description: string): AuthError {
  return new AuthError('invalid_token', 401, `invalid token: ${description}`, {
    'www-authenticate': `${REALM}, error="invalid_token", error_description="${description}"`,
  });
}

export function insufficientScope(scope: string): AuthError {
  return new AuthError('insufficient_scope', 403, `this token lacks the ${scope} scope`, {
    'www-authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"`,
  });
}
