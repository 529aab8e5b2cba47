import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The response a connection is answering now, or null. Node assigns it (`_httpMessage`, not part
 * of its public API) as soon as a request's headers are parsed and takes it back once answered; a
 * pipelined request waits its turn. An open connection without one is idle or still sending headers.
 */
export function currentResponse(socket: Socket): ServerResponse | null {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? null;
}
