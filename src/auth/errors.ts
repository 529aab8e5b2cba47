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
    logReason?: string,
  ) {
    super(statusCode, message, headers, logReason);
  }
}

/** The three ways a request can fail authentication, with their RFC 6750 challenges. */

export function missingCredentials(message: string): AuthError {
  return new AuthError('missing', 401, message, { 'www-authenticate': REALM });
}

/**
 * One answer for every token that does not authenticate, whatever the reason: a client must not
 * learn whether a token once existed (revoked, expired) or never did. The reason goes to the log.
 */
const INVALID_TOKEN = 'the token is unknown, revoked or expired, or does not verify';

export function invalidToken(reason: string): AuthError {
  return new AuthError(
    'invalid_token',
    401,
    `invalid token: ${INVALID_TOKEN}`,
    { 'www-authenticate': `${REALM}, error="invalid_token", error_description="${INVALID_TOKEN}"` },
    reason,
  );
}

export function insufficientScope(scope: string): AuthError {
  return new AuthError('insufficient_scope', 403, `this token lacks the ${scope} scope`, {
    'www-authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"`,
  });
}
