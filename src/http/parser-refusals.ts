import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { rawErrorResponse } from '../errors.js';
import { answeredWhileBodyArrives } from './intake.js';
import { currentResponse } from './socket-response.js';

/*
 * What Node's HTTP parser refuses, and the requests it hands to listeners instead of to Fastify
 * (CONNECT, an unsupported Expect): each still gets the `Error` body, written on the socket.
 */

/** What Node's HTTP parser (llhttp) puts on the errors it raises, beyond `code`. */
export interface ParserError extends Error {
  code?: string;
  /** llhttp's own words for what it rejected: a fixed text, never the client's bytes. */
  reason?: string;
  /** Where in `rawPacket` the rejected byte is. */
  bytesParsed?: number;
  /** The bytes being parsed: a Buffer (typed otherwise by @types/node). */
  rawPacket?: unknown;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The byte at `at` and the ones a UTF-8 lead byte says follow it, as one character if they are one. */
function characterAt(packet: Buffer, at: number): string | null {
  const lead = packet[at];
  if (lead === undefined) return null;
  const length = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  try {
    const text = strictUtf8.decode(packet.subarray(at, at + length));
    return [...text].length === 1 ? text : null;
  } catch {
    return null;
  }
}

/** `"ε" is %CE%B5`, or `byte 0x01 is %01` where the byte is no printable character. */
function asPercentEncoded(packet: Buffer, at: number): string {
  const character = characterAt(packet, at);
  if (character !== null && /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(character)) {
    return `"${character}" is ${encodeURIComponent(character)}`;
  }
  const byte = packet[at]!.toString(16).toUpperCase().padStart(2, '0');
  return `byte 0x${byte} is %${byte}`;
}

/**
 * The message of a 400 for a request the parser rejected: what it rejected, where it says, and for
 * a character not allowed in a URL (raw UTF-8, which curl sends as it is given), how to send it.
 */
export function parserErrorMessage(error: ParserError): string {
  const reason = error.reason ?? '';
  const part = /url (path|query)/.exec(reason)?.[1];
  const { rawPacket: packet, bytesParsed: at } = error;
  if (error.code === 'HPE_INVALID_URL' && part && Buffer.isBuffer(packet) && at !== undefined && at < packet.length) {
    return (
      `a character in the URL's ${part} must be percent-encoded: ${asPercentEncoded(packet, at)} ` +
      "(with curl: -G --data-urlencode 'name=value')"
    );
  }
  // The parser reads the URL up to the first space, then expects the version.
  if (error.code === 'HPE_INVALID_CONSTANT' && reason.startsWith('Expected HTTP/')) {
    return 'malformed HTTP request line: a space in the URL must be percent-encoded (%20)';
  }
  if (reason === '') return 'malformed HTTP request';
  return `malformed HTTP request: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`;
}

/** Sockets whose refusal waits for the answer of a request read before the bad bytes. */
const refusalQueued = new WeakSet<Socket>();

/**
 * Whether the parser's error is about a request that has had its answer (or whose answer has
 * begun): one whose bytes are still arriving, so the bad bytes are part of it. A second answer
 * would be garbage to the client. The parser reads requests in order, so once the in-flight
 * request is complete, the bad bytes are the next request's, which is owed its own answer.
 */
function aboutAnsweredRequest(socket: Socket, inFlight: ServerResponse | null): boolean {
  if (inFlight !== null && !inFlight.req.complete) return inFlight.headersSent;
  return answeredWhileBodyArrives(socket);
}

/** Requests the HTTP parser rejects never reach Fastify; they still get the `Error` body. */
export function clientErrorHandler(error: ParserError, socket: Socket) {
  const inFlight = currentResponse(socket);
  if (error.code === 'ECONNRESET' || !socket.writable || aboutAnsweredRequest(socket, inFlight)) {
    return socket.destroy();
  }
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request took too long to arrive']
        : [400, parserErrorMessage(error)];
  if (inFlight?.req.complete && !inFlight.writableFinished) {
    // A valid request read before the bad bytes is being answered (its answer may have begun):
    // it is answered first, and the refusal follows it, in the order the client sent them.
    if (refusalQueued.has(socket)) return;
    refusalQueued.add(socket);
    inFlight.once('finish', () => {
      if (socket.writable) socket.end(rawErrorResponse(status, message));
    });
    return;
  }
  socket.end(rawErrorResponse(status, message));
}

/**
 * An `Expect` other than 100-continue: Node answers 417 with an empty body unless someone listens
 * for it. The request is not processed, as RFC 9110 allows; the answer is the `Error` body.
 */
export function refuseExpectation(_request: IncomingMessage, response: ServerResponse) {
  response.socket?.end(rawErrorResponse(417, 'the Expect header is not supported (only 100-continue is)'));
}

/** CONNECT asks for a tunnel. Node drops the socket when nobody listens for it; answer instead. */
export function refuseConnect(_request: IncomingMessage, socket: Duplex) {
  socket.end(rawErrorResponse(400, 'CONNECT is not supported: this server is not a proxy'));
}
