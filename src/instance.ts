import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { plantStore } from './app.js';
import type { Config } from './config.js';
import { frameworkErrorHandler } from './errors.js';
import { clientErrorHandler, refuseConnect, refuseExpectation } from './http/parser-refusals.js';
import { sharedSerializers } from './http/shared-serializers.js';
import { LIMITS } from './limits.js';
import { LogOutput } from './telemetry/log-output.js';
import { lazyChildLogger, requestId, type LogDestination } from './telemetry/observability.js';
import type { Tracing } from './telemetry/span-types.js';
import type { Storage } from './storage/types.js';

/**
 * The Fastify instance the service (app.ts) is registered on, with the server's own options: what
 * the server (server.ts) listens with, and what the tests build.
 */

/**
 * Standard output, written in blocks (telemetry/log-output.ts) instead of one write per line. One per
 * process. The exit hook writes what is buffered: every path out (SIGTERM through
 * close-with-grace, an uncaught error, process.exit) passes through it, and only a SIGKILL loses
 * the last 100 ms of lines.
 */
let stdoutDestination: LogOutput | undefined;

function bufferedStdout() {
  if (stdoutDestination === undefined) {
    const destination = new LogOutput(1);
    process.on('exit', () => destination.flush());
    stdoutDestination = destination;
  }
  return stdoutDestination;
}

/** Process-level options; the server and the tests build the instance with exactly these. */
function serverOptions(config: Config, destination: LogDestination): FastifyServerOptions {
  return {
    logger: {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
      stream: destination,
    },
    // One line per request comes from telemetry/observability.ts instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // A request's child logger is made only when something logs through it.
    childLoggerFactory: lazyChildLogger,
    requestIdHeader: false,
    genReqId: requestId,
    // A path parameter of any length reaches its validator (a 400 naming `id`), rather than a 414
    // from the router past 100 characters; the request line is bounded by Node's header limit.
    routerOptions: { maxParamLength: 16 * 1024 },
    return503OnClosing: false,
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    bodyLimit: LIMITS.bodyBytes,
    // Behind a proxy, the client's address (--auth-failure-limit) comes from X-Forwarded-For.
    trustProxy: config.trustProxy,
    // Slow or idle clients must not hold sockets forever.
    connectionTimeout: 60_000,
    keepAliveTimeout: 5_000,
    requestTimeout: 30_000,
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
  };
}

export interface ServerDeps {
  config: Config;
  storage: Storage;
  /** Where log lines go; standard output when absent. Tests pass a capture stream. */
  logStream?: Writable;
  /** Present only when traces are on (telemetry/tracing.ts). */
  tracing?: Tracing;
}

/** The Fastify instance with the server's options and the service (app.ts) registered on it; the tests build theirs here too. */
export async function buildServer({ config, storage, logStream, tracing }: ServerDeps): Promise<FastifyInstance> {
  // The request lines (telemetry/observability.ts) go to the same destination as pino's, so they keep
  // their order among the other lines.
  const destination = logStream ?? bufferedStdout();
  const app = Fastify(serverOptions(config, destination));
  app.server.headersTimeout = 10_000;
  // Node checks the headers and request timeouts every 30 s by default, so a 10 s limit could
  // hold a socket for 40 s; every second keeps each limit to within a second.
  // Missing Host and CONNECT get the `Error` body here instead of Node's empty answers; every
  // header field is kept, so that too many are refused (checkRequestHead), never dropped.
  Object.assign(app.server, { connectionsCheckingInterval: 1_000, requireHostHeader: false, maxHeadersCount: 0 });
  app.server.on('connect', refuseConnect);
  app.server.on('checkExpectation', refuseExpectation);
  await app.register(plantStore, { config, storage, tracing, destination });
  return app;
}
