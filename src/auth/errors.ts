import { HttpError, REALM } from '../errors.js';
import { authFailures } from '../ops/metrics.js';

/** The three ways a request can fail authentication, with their RFC 6750 challenges. */

export function missingCredentials(message: string): HttpError {
  authFailures.inc({ reason: 'missing' });
  return new HttpError(401, message, { 'www-authenticate': REALM });
}

export function invalidToken(description: string): HttpError {
  authFailures.inc({ reason: 'invalid_token' });
  return new HttpError(401, `invalid token: ${description}`, {
    'www-authenticate': `${REALM}, error="invalid_token", error_description="${description}"`,
  });
}

export function insufficientScope(scope: string): HttpError {
  authFailures.inc({ reason: 'insufficient_scope' });
  return new HttpError(403, `this token lacks the ${scope} scope`, {
    'www-authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"`,
  });
}
