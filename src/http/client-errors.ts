import type { Socket } from 'node:net';
import { rawErrorResponse } from '../errors.js';

/** Requests the HTTP parser rejects never reach Fastify; they still get the `Error` body. */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
  if (error.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request took too long to arrive']
        : [400, 'malformed HTTP request'];
  socket.end(rawErrorResponse(status, message));
}
