import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, rawErrorResponse } from '../errors.js';
import { currentResponse } from './socket-response.js';

/** Sockets that were answered (say 401) before the request body had fully arrived. */
const answeredEarly = new WeakSet<Socket>();

/** onResponse hook: remembers an answer given while the body was still coming. */
export function noteEarlyAnswer(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
  if (!request.raw.complete) answeredEarly.add(request.raw.socket);
  done();
}

/** Sockets whose refusal waits for the answer of a request read before the bad bytes. */
const refusalQueued = new WeakSet<Socket>();

/** Requests the HTTP parser rejects never reach Fastify; they still get the `Error` body. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
  // Once this request was answered (or the answer has started), a second answer, such as a 408
  // when the rest of its body never comes, would be garbage to the client: just close.
  const inFlight = currentResponse(socket);
  const started = inFlight?.headersSent === true;
  if (error.code === 'ECONNRESET' || !socket.writable || started || answeredEarly.has(socket)) return socket.destroy();
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request took too long to arrive']
        : [400, 'malformed HTTP request'];
  if (inFlight?.req.complete) {
    // A valid request pipelined before the bad bytes, received whole, is being answered: it is
    // answered first, and the refusal follows it, in the order the client sent them. (A request
    // still receiving its body is the one the error is about: it is refused now.)
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

/**
 * HTTP/1.1 requires Host. Node's own refusal has an empty body, so it is turned off
 * (`requireHostHeader: false`) and the check made here, where the answer is the `Error` body.
 */
export function requireHostHeader(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
  done(
    request.raw.httpVersion === '1.1' && request.headers.host === undefined
      ? new HttpError(400, 'the Host header is required')
      : undefined,
  );
}
