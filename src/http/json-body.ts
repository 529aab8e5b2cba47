import type { preParsingHookHandler } from 'fastify';
import { parse } from 'lossless-json';
import { HttpError } from '../errors.js';
import { exactNumber } from './exact-number.js';

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

/** Strict UTF-8, lossless JSON; anything else is a 400 naming the problem. */
export function parseJsonBody(body: Buffer): unknown {
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
