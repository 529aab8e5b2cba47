import type { Writable } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { apiTokenVerifier } from './auth/api-token-verifier.js';
import bearer from './auth/bearer.js';
import type { Config } from './config.js';
import { jwtIsOn } from './config/check.js';
import { openApi } from './contract/openapi-document.js';
import { inputValidatorCompiler } from './contract/validation.js';
import { errorHandler, frameworkErrorHandler } from './errors.js';
import { CommitNotices } from './storage/commit-notices.js';
import { FeedHub } from './feed/hub.js';
import { changeFeed, hubSettings } from './feed/plugin.js';
import { FeedCursors } from './feed/cursor.js';
import {
  clientErrorHandler,
  noteEarlyAnswer,
  refuseConnect,
  refuseExpectation,
  checkRequestHead,
} from './http/client-errors.js';
import { cors } from './http/cors.js';
import { parseJsonBody, refuseEncodedBody } from './http/json-body.js';
import { rateLimit } from './http/rate-limit.js';
import { securityHeaders } from './http/security-headers.js';
import { notFoundOrWrongMethod } from './http/routing.js';
import { sharedSerializers } from './http/shared-serializers.js';
import { requestDeadline } from './http/request-deadline.js';
import { gracefulStop } from './ops/graceful-stop.js';
import { health } from './ops/health.js';
import { LogOutput } from './ops/log-output.js';
import { dependencyErrors, measureUnreachable } from './ops/metrics.js';
import { storeReport } from './ops/store-report.js';
import { lazyChildLogger, observability, requestId, type LogDestination } from './ops/observability.js';
import type { Tracing } from './ops/span-types.js';
import { plantRoutes } from './plants/routes.js';
import { PlantService } from './plants/service.js';
import { LIMITS } from './limits.js';
import { sharedSchemas } from './schemas.js';
import type { Storage } from './storage/types.js';
import { AddressGuard } from './webhooks/address-guard.js';
import { webhookDelivery } from './webhooks/delivery-plugin.js';
import { webhookRoutes } from './webhooks/routes.js';
import { webhookSchemas } from './webhooks/schemas.js';
import { WebhookService } from './webhooks/service.js';

export interface AppDeps {
  config: Config;
  storage: Storage;
  /** Where log lines go; standard output when absent. Tests pass a capture stream. */
  logStream?: Writable;
  /** Present only when traces are on (ops/tracing.ts); absent, no tracing hook is added. */
  tracing?: Tracing;
}

/**
 * Standard output, written in blocks (ops/log-output.ts) instead of one write per line. One per
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

/** Process-level options; the server and the tests build the app with exactly these. */
function serverOptions(config: Config, destination: LogDestination): FastifyServerOptions {
  return {
    logger: {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
      stream: destination,
    },
    // One line per request comes from ops/observability.ts instead of Fastify's two.
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

export async function buildApp({ config, storage, logStream, tracing }: AppDeps): Promise<FastifyInstance> {
  // The request lines (ops/observability.ts) go to the same destination as pino's, so they keep
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

  app.setErrorHandler(errorHandler);
  app.setValidatorCompiler(inputValidatorCompiler);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    // An operation that takes no body (DELETE, rotate-secret) ignores whatever a client sent.
    if (request.routeOptions.schema?.body === undefined) return done(null, undefined);
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  for (const schema of sharedSchemas) app.addSchema(schema);
  for (const schema of webhookSchemas) app.addSchema(schema);

  // Traces first: a request's span starts before any other hook runs.
  if (tracing) await app.register(tracing.requests);

  securityHeaders(app);
  await app.register(observability, { traceIdOf: tracing?.traceIdOf, destination });
  await app.register(gracefulStop);
  app.addHook('onRequest', checkRequestHead);
  // Before routing decides: a preflight is answered here, and 404s and 405s carry the CORS headers.
  let methodsOf: (path: string) => string | null = () => null;
  cors(app, config.corsOrigins, (path) => methodsOf(path));
  methodsOf = notFoundOrWrongMethod(app);
  app.addHook('preParsing', refuseEncodedBody);
  app.addHook('onResponse', noteEarlyAnswer);
  await app.register(openApi);
  storage.reportTo?.(storeReport(app.log));
  if (storage.unreachableSeconds) measureUnreachable(() => storage.unreachableSeconds!());
  await app.register(health, { storage });
  await app.register(bearer, {
    apiToken: apiTokenVerifier(storage),
    // jose is loaded only when JWTs are on (most stores use API tokens alone): importing it is a
    // visible part of what a start spends loading modules (bench/analysis.md).
    jwt: jwtIsOn(config) ? (await import('./auth/jwt.js')).jwtVerifier(config) : undefined,
    failureLimit: config.authFailureLimit,
  });
  requestDeadline(app, storage.timeoutMs);
  await app.register(rateLimit, {
    rateLimit: config.rateLimit,
    redisUrl: config.redisUrl,
    onRedisError: () => dependencyErrors.inc({ dependency: 'redis' }),
  });
  // The change feed and the webhook deliverer: this process's commits reach its open streams, and
  // its deliverer, at once (CommitNotices).
  const commits = new CommitNotices();
  const cursors = new FeedCursors(() => storage.feedKey());
  const hub =
    config.eventRetention > 0 ? new FeedHub(storage, cursors, { ...hubSettings(config), log: app.log }) : null;
  if (hub !== null) commits.listen((accounts) => hub.poke(accounts));
  const plantStore = commits.notifying(storage);
  await app.register(plantRoutes, {
    plants: new PlantService(plantStore, { groupCommit: config.groupCommit, pageCacheBytes: config.pageCacheBytes }),
  });
  await app.register(changeFeed, { storage, cursors, hub, retentionMs: config.eventRetention });

  // Webhooks: the /webhooks API, and the deliverer that sends the outbox off the request path.
  const guard = new AddressGuard(config.webhookAllowPrivate);
  await app.register(webhookRoutes, { webhooks: new WebhookService(storage, guard) });
  await app.register(webhookDelivery, {
    storage,
    commits,
    guard,
    timeoutMs: config.webhookTimeout,
    retrySchedule: config.webhookRetrySchedule,
    concurrency: config.webhookConcurrency,
    endpointConcurrency: config.webhookEndpointConcurrency,
    retentionMs: config.webhookRetention,
  });
  return app;
}
