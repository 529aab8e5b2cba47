import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { rawErrorResponse } from '../errors.js';
import { currentResponse } from '../http/socket-response.js';

/**
 * How long a connection that was still sending a request's headers when the stop began has to
 * finish them. Node stops applying its headers timeout once the server closes, so without this a
 * client that never finishes its headers would hold the stop until --shutdown-timeout (exit 1).
 */
const HEADERS_GRACE_MS = 2_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** True from the stop signal on (`drainThenClose`, or `app.close()`): /readyz answers 503. */
    isStopping(): boolean;
    /** Drains for `delayMs` (0: none), then closes: see gracefulStopPlugin. */
    drainThenClose(delayMs: number): Promise<void>;
  }
}

/** Runs `work` after the event loop has been once through its poll phase (where sockets are accepted and read). */
function afterOnePoll(work: () => void) {
  setImmediate(() => setImmediate(work));
}

/**
 * How the server stops (`drainThenClose`, on SIGTERM or SIGINT): first it drains, then whatever a
 * client had sent before it closed is answered, and nothing else holds the process.
 *
 * 0. Draining, for --shutdown-delay (none for a Ctrl-C): /readyz answers 503 at once, so that a
 *    balancer's health checks take the instance out, while it goes on accepting and serving as
 *    before, for the requests the balancer still sends meanwhile; each answer says
 *    `Connection: close`, so kept-alive clients open their next connection elsewhere. Closing
 *    while a balancer still sends would reset connections the kernel accepts after the listening
 *    socket is gone, and race requests written to idle kept-alive ones as they are closed.
 * 1. The listening socket stays open for one more turn of the event loop: connections the kernel
 *    had already completed are accepted instead of being reset when it closes.
 * 2. It closes; one more turn reads whatever had arrived on open connections, so a request sent
 *    before the signal is in progress, not idle.
 * 3. Idle connections (kept alive, or opened with no request yet, such as a browser's preconnect or
 *    a balancer's probe) are closed at once rather than at their keep-alive or connection timeout.
 *    Node counts a connection that has sent nothing as busy (so that the headers timeout applies to
 *    it), and stops checking that timeout once closing: those are closed here.
 * 4. Requests in progress are finished and answered with `Connection: close` (the hook below, from
 *    the start of the drain), after which their sockets close. The process exits when the slowest
 *    of them is answered.
 * 5. A connection still sending its headers has HEADERS_GRACE_MS to finish them; past that it is
 *    answered 503 and closed.
 */
async function gracefulStopPlugin(app: FastifyInstance) {
  let stopping = false;
  app.decorate('isStopping', () => stopping);
  app.decorate('drainThenClose', async (delayMs: number) => {
    stopping = true;
    if (delayMs > 0) await sleep(delayMs);
    await app.close();
  });

  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  const closeUnused = () => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  };
  // Idle connections are closed by now: an open one without a response is still sending headers.
  const closeStalled = () => {
    for (const socket of connections) {
      if (socket.writableEnded || currentResponse(socket) !== null) continue;
      socket.end(rawErrorResponse(503, 'the server is stopping: send the request again'), () => socket.destroy());
    }
  };

  app.addHook('onSend', (_request, reply, payload, done) => {
    if (stopping) reply.header('connection', 'close');
    done(null, payload);
  });

  app.addHook('preClose', (done) => {
    stopping = true;
    const server = app.server;
    // A response whose headers went out before the drain said keep-alive: its socket closes as
    // soon as the response ends.
    server.keepAliveTimeout = 1;
    const closeIdle = server.closeIdleConnections.bind(server);
    // server.close() calls this as it closes the listening socket (step 3 after step 2).
    server.closeIdleConnections = () =>
      afterOnePoll(() => {
        closeIdle();
        closeUnused();
        setTimeout(closeStalled, HEADERS_GRACE_MS).unref();
      });
    afterOnePoll(done); // step 1; Fastify then calls server.close()
  });
}

export const gracefulStop = fp(gracefulStopPlugin, { name: 'graceful-stop' });
