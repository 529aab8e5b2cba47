import cluster from 'node:cluster';
import type { Writable } from 'node:stream';
import closeWithGrace from 'close-with-grace';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { plantStore } from './app.js';
import { announceFirstToken, baseUrl, FIRST_TOKEN_LOGGED, issueFirstToken } from './auth/api-tokens.js';
import type { Config } from './config.js';
import { frameworkErrorHandler } from './errors.js';
import { clientErrorHandler, refuseConnect, refuseExpectation } from './http/intake.js';
import { sharedSerializers } from './http/shared-serializers.js';
import { LIMITS } from './limits.js';
import { answerMetricCollections } from './telemetry/cluster-metrics.js';
import { onCtrlC } from './lifecycle/ctrl-c.js';
import { LogOutput } from './telemetry/log-output.js';
import { lazyChildLogger, requestId, type LogDestination } from './telemetry/observability.js';
import type { Tracing } from './telemetry/span-types.js';
import { logStart } from './lifecycle/start-line.js';
import { STOP_WITHOUT_DRAIN, supervise } from './lifecycle/supervisor.js';
import { tracesWanted } from './config/tracing-env.js';
import { startTracing } from './telemetry/tracing.js';
import { openStorage } from './storage/open.js';
import type { Storage } from './storage/types.js';

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

function openConfiguredStorage(config: Config): Promise<Storage> {
  return openStorage(config.database, {
    pgPoolMax: config.pgPoolMax,
    databaseDirectUrl: config.databaseDirectUrl,
    databaseTimeoutMs: config.databaseTimeout,
    waitForDatabase: true,
    feed: config.eventRetention > 0,
    sqliteWriter: config.sqliteWriter,
  });
}

/**
 * A store whose database did not answer at start serves 503 until it does (storage/postgres):
 * then the first token is made (by the process that makes it), or on an error no retry can mend
 * the process exits 1 with one line, as it would have at once. A token that cannot be made then
 * (the database gone again) is made at the next start.
 */
async function whenStoreReady(
  store: Storage,
  { issueToken, fail }: { issueToken: ((token: string) => void) | null; fail: (reason: string) => void },
): Promise<void> {
  const waiting = store.untilReady?.();
  if (!waiting) return;
  try {
    await waiting;
  } catch (error) {
    return fail((error as Error).message);
  }
  if (issueToken === null) return;
  const token = await issueFirstToken(store).catch(() => null);
  if (token !== null) issueToken(token);
}

/**
 * One process serving HTTP until SIGTERM/SIGINT (lifecycle/graceful-stop.ts says how it stops), then
 * "stopped" as the last log line and exit 0; exit 1 if requests still run after --shutdown-timeout.
 */
async function serveHere(config: Config, store: Storage, firstToken: string | null) {
  // Each process (each worker) exports its own spans.
  const tracing = await startTracing(config);
  const app = await buildServer({ config, storage: store, tracing });
  const worker = cluster.isWorker;
  let stopping = false;
  const closer = closeWithGrace(
    {
      delay: config.shutdownDelay + config.shutdownTimeout,
      logger: app.log,
      onTimeout: (delay) => app.log.error(`stopped: requests were still running ${delay} ms after the signal`),
      // SIGINT is Ctrl-C's, which may come twice for one press (lifecycle/ctrl-c.ts). A worker ignores
      // it: the terminal's reaches the whole process group, and it stops when its primary says.
      skip: ['SIGINT'],
    },
    async ({ signal, err, manual }) => {
      stopping = true;
      // Only SIGTERM drains: it comes from a supervisor or an orchestrator, with a balancer in front.
      // A Ctrl-C (`manual`, lifecycle/ctrl-c.ts) is a person at a terminal, and an error is no time to wait.
      const drainMs = signal === 'SIGTERM' ? config.shutdownDelay : 0;
      if (err) app.log.error({ err }, 'stopping after an unexpected error');
      else if (drainMs > 0) app.log.info({ signal, drainMs }, 'stopping: draining, then finishing in-flight requests');
      else app.log.info({ signal: manual ? 'SIGINT' : signal }, 'stopping: finishing in-flight requests');
      await app.drainThenClose(drainMs);
      await store.close();
      await tracing?.shutdown();
      app.log.info('stopped');
    },
  );
  if (worker) {
    process.on('SIGINT', () => {}); // see `skip` above
    process.on('message', (message) => {
      if (message === STOP_WITHOUT_DRAIN && !stopping) void closer.close();
    });
    answerMetricCollections();
  } else {
    const force = () => {
      app.log.error('second SIGINT, exiting');
      process.exit(1);
    };
    onCtrlC({ stop: () => (stopping ? force() : closer.close()), force });
  }
  if (!worker) logStart(app.log, config); // with --workers, the primary says it once
  if (firstToken !== null) app.log.info({ account: 'default' }, FIRST_TOKEN_LOGGED);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const url = address !== null && typeof address === 'object' ? baseUrl(address.address, address.port) : null;
  if (firstToken !== null && url !== null) announceFirstToken(firstToken, url);
  void whenStoreReady(store, {
    issueToken: worker
      ? null
      : (token) => {
          app.log.info({ account: 'default' }, FIRST_TOKEN_LOGGED);
          if (url !== null) announceFirstToken(token, url);
        },
    fail: (reason) => {
      app.log.error({ reason }, 'database: refused for good; exiting');
      process.stderr.write(`plant-store: ${reason}\n`);
      process.exit(1);
    },
  });
}

export async function serve(config: Config) {
  // A bad OTEL_* setting stops here (exit 2), before the store is touched or a worker starts.
  tracesWanted();
  if (cluster.isWorker) return serveHere(config, await openConfiguredStorage(config), null);
  if (config.workers > 1) {
    return supervise(config, async (later) => {
      const store = await openConfiguredStorage(config);
      if (store.untilReady?.()) {
        // The workers start at once and wait for the database themselves; this waits beside them.
        void whenStoreReady(store, { issueToken: later.token, fail: later.failed }).finally(() => store.close());
        return null;
      }
      try {
        return await issueFirstToken(store);
      } finally {
        await store.close();
      }
    });
  }
  // Migrations (in openStorage) and the first token happen before serving, unless the database
  // does not answer at start: then it serves 503 until it does.
  const store = await openConfiguredStorage(config);
  return serveHere(config, store, store.untilReady?.() ? null : await issueFirstToken(store));
}
