import { LIMITS } from '../limits.js';
import type { ErrorStatus } from '../http/route-docs.js';

/**
 * The document's shared error responses: each status an operation may list, described once with
 * an example message, as the response component `Error<status>`, and `OtherErrors` for the rest.
 */

/**
 * Each error status an operation may list: its meaning, and an example message (the service's
 * own words). Each becomes the response component `Error<status>`.
 */
const ERRORS = {
  400: {
    description:
      'Bad request: malformed JSON, a body that is not an object, a missing or wrongly typed field (no coercion), ' +
      'a value outside the limits its schema states (for instance id outside int64, a text empty where its schema ' +
      'needs one or longer than its maxLength, U+0000 in a text), or a bad query parameter (a cursor among them ' +
      'when sent with other filters or order than it was made for). The message names the offending field or ' +
      'parameter; in a batch, with the index of the item ([3].name).',
    message: 'name must be a string',
  },
  401: {
    description:
      'Missing, malformed, unknown, revoked or expired token, or a JWT that fails verification. ' +
      'WWW-Authenticate: Bearer realm="plant-store" (with error="invalid_token" when a token was sent).',
    message: 'missing Authorization header; send "Authorization: Bearer <token>"',
  },
  403: {
    description:
      'The token lacks the scope this operation needs (plants:read, plants:write or webhooks:manage); ' +
      'WWW-Authenticate carries error="insufficient_scope".',
    message: 'this token lacks the plants:write scope',
  },
  404: {
    description: "Not found: nothing with this id in the caller's account (another account's is never visible).",
    message: 'no such path: /plantz',
  },
  406: {
    description:
      'The change feed answers only text/event-stream, and the Accept header (or its absence) does not admit it.',
    message: 'GET /events answers only text/event-stream: send Accept: text/event-stream',
  },
  408: {
    description: 'The request (headers within 10 s, the whole request within 30 s) did not arrive in time.',
    message: 'request took too long to arrive',
  },
  409: {
    description:
      'Conflict with what is stored: for a create, the account already has a plant with this id ' +
      'and a different value in any field (in a batch, the message names the item: [3].id); for a new webhook ' +
      'endpoint, the account already has 16; ' +
      'for a recover, the endpoint is disabled.',
    message: 'a different plant with id 1 already exists',
  },
  410: {
    description:
      'The cursor is older than the events the server keeps (--event-retention): list again, then reopen the feed without a cursor.',
    message:
      'Last-Event-ID is older than the events this server keeps (--event-retention): list the plants again, then reopen the feed without a cursor',
  },
  412: {
    description: 'If-Match names another version than the current ETag: someone changed it first, and nothing changed.',
    message: 'the plant has changed: If-Match does not match its current ETag; read it again',
  },
  413: {
    description: 'The body is larger than the operation takes: 16 KiB, or 1 MiB for POST /plants/batch.',
    message: 'request body is larger than 16384 bytes',
  },
  415: {
    description:
      'Content-Type is missing or is not application/json (any charset) or application/*+json, ' +
      'or the body has a Content-Encoding other than identity.',
    message: 'Content-Type must be application/json (or application/*+json)',
  },
  429: {
    description:
      'Too many requests for this account, or (change feed) as many feeds open as the account or the server may have; ' +
      'Retry-After says when to try again.',
    message: 'too many requests for this account: the limit is 100 per second; retry after 1 second',
  },
  431: {
    description: `Request headers larger than 16 KiB, or more than ${LIMITS.headerFields} header fields (none is dropped unread).`,
    message: 'request headers are too large',
  },
  500: {
    description: 'Unexpected server error; the message carries no internals.',
    message: 'internal server error',
  },
  503: {
    description:
      'Temporarily unavailable (stopping; the store or the identity provider cannot be reached or did ' +
      'not answer within --database-timeout; a write whose commit answer was lost; the disk is full or failing); ' +
      'Retry-After says when to retry.',
    message: 'the store is unavailable right now; retry shortly',
  },
} as const satisfies Record<ErrorStatus, { description: string; message: string }>;

/** The header an error of these statuses always carries: documented so that clients know to wait for it. */
const RETRY_AFTER = {
  'Retry-After': {
    description: 'Seconds to wait before trying again',
    schema: { type: 'integer', minimum: 0 },
  },
};
const ERROR_HEADERS: Partial<Record<ErrorStatus, object>> = { 429: RETRY_AFTER, 503: RETRY_AFTER };

/** The `default` response of every operation: whatever it does not list, with the same body. */
const OTHER_ERRORS = {
  description:
    'Any other error, with the same Error body: 404 (no such path), 405 (method not allowed; see Allow), ' +
    '408 (request too slow), 417 (unsupported Expect), 431 (headers too large, or too many).',
  example: { error: 405, message: 'DELETE is not allowed on /plants; use GET, HEAD, POST' },
};

/** A response of the OpenAPI document, as the finishing steps (openapi.ts) read and write it. */
export interface Media {
  schema?: { $ref?: string };
  example?: unknown;
}
export interface Response {
  $ref?: string;
  description?: string;
  headers?: object;
  content?: Record<string, Media>;
  links?: Record<string, object>;
}

function errorBody(description: string, example: object, headers?: object): Response {
  const content = { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example } };
  return { description, ...(headers && { headers }), content };
}

/** The shared response for an `Error` response of this status, if there is one. */
export function sharedError(status: string): [name: string, response: Response] | undefined {
  if (status === 'default') return ['OtherErrors', errorBody(OTHER_ERRORS.description, OTHER_ERRORS.example)];
  const code = Number(status);
  const error: { description: string; message: string } | undefined = ERRORS[code as ErrorStatus];
  const headers = ERROR_HEADERS[code as ErrorStatus];
  return error && [`Error${code}`, errorBody(error.description, { error: code, message: error.message }, headers)];
}
