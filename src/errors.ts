import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { LIMITS } from './limits.js';
import { isStorageUnavailable, unavailableMessage } from './storage/unavailable.js';

/**
 * The OWASP REST set, on every JSON answer (errors, 404/405, the ops endpoints, the raw answers of
 * this file): a browser that is handed one must not sniff, frame, run or keep it. The browser
 * headers of Helmet's set (referrer, cross-origin and download policies) protect pages, and a
 * JSON body is not one. A route that needs another `Cache-Control` sets it in its handler (or
 * route-level hook), which runs after the hook of http/security-headers.ts: the last value set wins.
 * Here, beside the raw answers that write them, so that errors need nothing from http/.
 */
export const API_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
});

/** An error that already knows its HTTP status; thrown where the problem is known. */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /**
     * Why, for the operator's log alone: what the answer must not tell the client (which of the
     * ways a token fails, what a webhook's host resolves to). Logged at info with the refusal.
     */
    readonly logReason?: string,
  ) {
    super(message);
  }
}

export interface ErrorBody {
  error: number;
  message: string;
}

export const REALM = 'Bearer realm="plant-store"';

/** The one Content-Type of every JSON answer, success or error, object or stream. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Messages for the errors Fastify raises itself, so clients see our words, not internals. */
const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: `request body is larger than ${LIMITS.bodyBytes} bytes`,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_BAD_URL: 'malformed URL',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Content-Type is not a valid media type',
  FST_ERR_ASYNC_CONSTRAINT: 'malformed request',
};

export function errorBody(statusCode: number, message: string): ErrorBody {
  return { error: statusCode, message };
}

/** Turns anything thrown while handling a request into the one `Error` body. */
export function toErrorResponse(error: FastifyError | HttpError | Error): {
  statusCode: number;
  message: string;
  headers: Record<string, string>;
} {
  if (error instanceof HttpError) {
    return { statusCode: error.statusCode, message: error.message, headers: error.headers };
  }
  const statusCode = (error as FastifyError).statusCode;
  if (statusCode !== undefined && statusCode >= 400 && statusCode < 500) {
    const code = (error as FastifyError).code;
    return { statusCode, message: FRAMEWORK_MESSAGES[code] ?? error.message, headers: {} };
  }
  if (statusCode === 503 || isStorageUnavailable(error)) {
    return {
      statusCode: 503,
      message: unavailableMessage(error),
      headers: { 'retry-after': '1' },
    };
  }
  return { statusCode: 500, message: 'internal server error', headers: {} };
}

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const { statusCode, headers, ...answer } = toErrorResponse(error);
  // Each route has its own body limit (a batch takes 1 MiB): the message states the route's.
  const message =
    (error as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE'
      ? `request body is larger than ${request.routeOptions?.bodyLimit ?? LIMITS.bodyBytes} bytes`
      : answer.message;
  if (error instanceof HttpError && error.logReason !== undefined) {
    request.log.info({ status: statusCode, reason: error.logReason }, 'request refused');
  }
  if (statusCode >= 500) {
    // An HttpError is an answer given on purpose (stopping, a provider down): worth a line, not a stack.
    if (error instanceof HttpError) request.log.warn({ status: statusCode, reason: message }, 'request refused');
    // So is a store that cannot take it now (its cause is logged once where it is met): the code and
    // the store's own words, not a stack per request.
    else if (isStorageUnavailable(error)) {
      const { code } = error as { code?: string };
      request.log.warn({ status: statusCode, reason: message, code, cause: error.message }, 'request refused');
    } else request.log.error({ err: error }, 'request failed');
  }
  return reply.code(statusCode).headers(headers).type(JSON_CONTENT_TYPE).send(errorBody(statusCode, message));
}

/** Errors Fastify raises before any hook runs (a malformed URL): the same body and headers. */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  return errorHandler(error, request, reply.headers(API_HEADERS));
}

/** The raw bytes for a request the HTTP parser rejected before Fastify could see it. */
export function rawErrorResponse(statusCode: number, message: string): string {
  const body = JSON.stringify(errorBody(statusCode, message));
  return (
    `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\n` +
    Object.entries(API_HEADERS)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}
