import cluster from 'node:cluster';
import closeWithGrace from 'close-with-grace';
import { announceFirstToken, baseUrl, FIRST_TOKEN_LOGGED, issueFirstToken } from './auth/api-tokens.js';
import type { Config } from './config.js';
import { tracesWanted } from './config/tracing-env.js';
import { buildServer } from './instance.js';
import { onCtrlC } from './lifecycle/ctrl-c.js';
import { logStart } from './lifecycle/start-line.js';
import { STOP_WITHOUT_DRAIN, supervise } from './lifecycle/supervisor.js';
import { openStorage } from './storage/open.js';
import type { Storage } from './storage/types.js';
import { answerMetricCollections } from './telemetry/cluster-metrics.js';
import { startTracing } from './telemetry/tracing.js';

/** The process: the store opened, the first token, signals, listening (lifecycle/supervisor.ts: --workers). */

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
