import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import { parse } from 'lossless-json';
import { HttpError } from '../errors.js';
import { LIMITS } from '../limits.js';

/*
 * A request's intake, from a parsed head to a parsed body, before any route runs: the head (header
 * count, Host), the body's coding and media type, and the body itself (strict UTF-8, lossless
 * JSON, each number exact). Each refusal is the `Error` body. What Node's parser refuses before a
 * request exists is parser-refusals.ts's.
 */

/**
 * Per socket, a request answered (say 401) before its body had fully arrived. While its body is
 * still coming, a parser error is about that body, and the request has had its answer already.
 */
const answeredEarly = new WeakMap<Socket, IncomingMessage>();

/** onResponse hook: remembers an answer given while the body was still coming. */
export function noteEarlyAnswer(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  if (!request.raw.complete) answeredEarly.set(request.raw.socket, request.raw);
  done();
}

/** Whether the socket's last request was answered before its body had fully arrived, and its body is still coming. */
export function answeredWhileBodyArrives(socket: Socket): boolean {
  const early = answeredEarly.get(socket);
  return early !== undefined && !early.complete;
}

/**
 * A Host as RFC 9110 has it (uri-host [":" port]), in the forms clients send: a name of letters,
 * digits and `-._~` (an IPv4 address is one), or an IPv6 address in brackets; then an optional port.
 */
const HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::\d{0,5})?$/;

/**
 * The request's head, checked once before anything reads it, in one pass over its raw fields:
 *
 * - Node keeps about the first 1,000 header fields and drops the rest without a word, so an
 *   `Authorization` after 999 others read as missing. The server keeps them all instead
 *   (`maxHeadersCount: 0`; their bytes stay bounded by the 16 KiB header limit), and more than
 *   LIMITS.headerFields is a 431, as too many bytes are.
 * - HTTP/1.1 requires one Host, and a server must refuse a missing, repeated or malformed one with a
 *   400 (RFC 9112, 3.2): whatever reads it later (a proxy, a log) can then trust its shape. Node's own
 *   refusal of a missing one has an empty body, so it is turned off (`requireHostHeader: false`) and
 *   made here, where the answer is the `Error` body.
 */
export function checkRequestHead(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
  const { rawHeaders, httpVersion } = request.raw;
  if (rawHeaders.length / 2 > LIMITS.headerFields) {
    return done(new HttpError(431, `request has more than ${LIMITS.headerFields} header fields`));
  }
  const { host } = request.headers;
  if (host === undefined) {
    return done(httpVersion === '1.1' ? new HttpError(400, 'the Host header is required') : undefined);
  }
  let hostLines = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') hostLines++;
  }
  done(
    HOST.test(host) && hostLines === 1
      ? undefined
      : new HttpError(400, 'the Host header must be given once, as a host name or address with an optional port'),
  );
}

const JSON_MEDIA_TYPE = /^application\/(?:[\w.!#$&^-]+\+)?json$/i;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * preParsing hook of every route: bodies are never decompressed, so a body sent with a coding other
 * than identity is refused (once routing and authentication have spoken), whatever the operation.
 */
export const refuseEncodedBody: preParsingHookHandler = (request, _reply, payload, done) => {
  const encoding = request.headers['content-encoding'];
  const hasBody = request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length']) > 0;
  if (hasBody && encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    done(new HttpError(415, `Content-Encoding ${encoding} is not supported: send the body uncompressed`));
  } else {
    done(null, payload);
  }
};

function mediaTypeOf(header: string | undefined): string | undefined {
  return header === undefined ? undefined : header.split(';', 1)[0]!.trim().toLowerCase();
}

/** `application/json` with any parameters, or `application/*+json`. */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === 'application/json') return true; // what nearly every client sends, checked without a split
  const mediaType = mediaTypeOf(header);
  return mediaType !== undefined && JSON_MEDIA_TYPE.test(mediaType);
}

/** A preParsing hook refusing (415) any Content-Type `accepts` does not take, before a byte of the body is read. */
function requireMediaType(accepts: (header: string | undefined) => boolean, message: string): preParsingHookHandler {
  return (request, _reply, payload, done) => {
    if (accepts(request.headers['content-type'])) done(null, payload);
    else done(new HttpError(415, message));
  };
}

/** Routes that take a JSON document. */
export const requireJsonBody = requireMediaType(
  isJsonContentType,
  'Content-Type must be application/json (or application/*+json)',
);

/** Routes that take a JSON merge patch (RFC 7396), which other `+json` types (JSON Patch...) are not. */
export const requireMergePatchBody = requireMediaType(
  (header) => ['application/json', 'application/merge-patch+json'].includes(mediaTypeOf(header) ?? ''),
  'Content-Type must be application/merge-patch+json or application/json',
);

/**
 * A JSON number literal read by its exact decimal value, as lossless-json hands it over.
 *
 * - An integer value, whatever its form (`100`, `1e2`, `100.0`, `1.5e1`, `-0`), is that integer:
 *   a number within ±2^53, a BigInt beyond, so `9007199254740993` and `9007199254740992` stay apart.
 * - A value that is not an integer stays a JS number, except when the double nearest to it is an
 *   integer (`1e-400` underflows to 0, `1.0000000000000000001` rounds to 1): then it is NaN, so no
 *   check can mistake it for the integer it is not.
 * - An integer too long to matter (more than MAX_DIGITS digits, far beyond int64) is ±Infinity,
 *   rather than a BigInt of a billion digits for `1e1000000000`.
 */

const SHORT_INTEGER = /^-?\d{1,15}$/; // within ±2^53, so a double holds it exactly
const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
const MAX_DIGITS = 1000;
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function notAnInteger(literal: string): number {
  const value = Number(literal);
  return Number.isInteger(value) ? Number.NaN : value;
}

export function exactNumber(literal: string): number | bigint {
  if (SHORT_INTEGER.test(literal)) return Number(literal) + 0; // + 0 makes -0 plain 0
  const parts = NUMBER.exec(literal);
  if (parts === null) return Number(literal); // lossless-json only passes JSON numbers; kept total anyway
  const [, sign, whole, fraction = '', exponentText = '0'] = parts;
  const significant = `${whole}${fraction}`.replace(/^0+/, '');
  if (significant === '') return 0;
  const digits = significant.replace(/0+$/, '');
  // value = digits × 10^shift, digits ending in a non-zero digit: an integer exactly when shift >= 0.
  // An exponent of more than 7 digits is beyond any length that matters either way.
  const exponent =
    exponentText.replace(/^[+-]?0*/, '').length > 7 ? Number(exponentText) * Infinity : Number(exponentText);
  const shift = exponent - fraction.length + (significant.length - digits.length);
  if (shift < 0) return notAnInteger(literal);
  if (digits.length + shift > MAX_DIGITS) return sign === '-' ? -Infinity : Infinity;
  const value = BigInt(`${sign}${digits}`) * 10n ** BigInt(shift);
  return value >= MIN_SAFE && value <= MAX_SAFE ? Number(value) : value;
}

/** Strict UTF-8, lossless JSON; anything else is a 400 naming the problem. */
function parseJson(body: Buffer): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(body);
  } catch {
    throw new HttpError(400, 'request body is not valid UTF-8');
  }
  if (text.trim() === '') throw new HttpError(400, 'request body is empty; send a JSON object');
  try {
    return parse(text, null, exactNumber);
  } catch (error) {
    const detail = error instanceof RangeError ? 'nested too deeply' : (error as Error).message;
    throw new HttpError(400, `malformed JSON: ${detail}`);
  }
}

/**
 * The one body parser, for every content type (a route's preParsing hook has refused the types it
 * does not take). An operation that takes no body (DELETE, rotate-secret) ignores whatever a client sent.
 */
export function parseJsonBody(
  request: FastifyRequest,
  body: Buffer,
  done: (error: Error | null, body?: unknown) => void,
): void {
  let parsed: unknown;
  try {
    parsed = request.routeOptions.schema?.body === undefined ? undefined : parseJson(body);
  } catch (error) {
    done(error as Error, undefined);
    return;
  }
  done(null, parsed);
}
