import cluster from 'node:cluster';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { issueFirstToken } from './auth/api-tokens.js';
import type { Config } from './config.js';
import { answerMetricCollections } from './ops/cluster-metrics.js';
import { announceFirstToken, baseUrl, FIRST_TOKEN_LOGGED } from './ops/first-token.js';
import { logStart } from './ops/start-line.js';
import { supervise } from './ops/supervisor.js';
import { tracesWanted } from './config/tracing-env.js';
import { startTracing } from './ops/tracing.js';
import { openStorage } from './storage/open.js';
import type { Storage } from './storage/types.js';

function openConfiguredStorage(config: Config): Promise<Storage> {
  return openStorage(config.database, {
    pgPoolMax: config.pgPoolMax,
    databaseDirectUrl: config.databaseDirectUrl,
    feed: config.eventRetention > 0,
    sqliteWriter: config.sqliteWriter,
  });
}

/**
 * One process serving HTTP until SIGTERM/SIGINT (ops/graceful-stop.ts says how it stops), then
 * "stopped" as the last log line and exit 0; exit 1 if requests still run after --shutdown-timeout.
 */
async function serveHere(config: Config, store: Storage, firstToken: string | null) {
  // Each process (each worker) exports its own spans.
  const tracing = await startTracing(config);
  const app = await buildApp({ config, storage: store, tracing });
  const worker = cluster.isWorker;
  closeWithGrace(
    {
      delay: config.shutdownTimeout,
      logger: app.log,
      onTimeout: (delay) => app.log.error(`stopped: requests were still running ${delay} ms after the signal`),
      // A worker stops when its primary forwards the signal; a terminal's Ctrl-C reaches the whole
      // process group, and a second signal would make it exit at once.
      skip: worker ? ['SIGINT'] : [],
    },
    async ({ signal, err }) => {
      if (err) app.log.error({ err }, 'stopping after an unexpected error');
      else app.log.info({ signal }, 'stopping: finishing in-flight requests');
      await app.close();
      await store.close();
      await tracing?.shutdown();
      app.log.info('stopped');
    },
  );
  if (worker) {
    process.on('SIGINT', () => {}); // see `skip` above
    answerMetricCollections();
  }
  if (!worker) logStart(app.log, config); // with --workers, the primary says it once
  if (firstToken !== null) app.log.info({ account: 'default' }, FIRST_TOKEN_LOGGED);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  if (firstToken !== null && address !== null && typeof address === 'object') {
    announceFirstToken(firstToken, baseUrl(address.address, address.port));
  }
}

export async function serve(config: Config) {
  // A bad OTEL_* setting stops here (exit 2), before the store is touched or a worker starts.
  tracesWanted();
  if (cluster.isWorker) return serveHere(config, await openConfiguredStorage(config), null);
  if (config.workers > 1) {
    return supervise(config, async () => {
      const store = await openConfiguredStorage(config);
      try {
        return await issueFirstToken(store);
      } finally {
        await store.close();
      }
    });
  }
  // Migrations (in openStorage) and the first token happen before serving.
  const store = await openConfiguredStorage(config);
  return serveHere(config, store, await issueFirstToken(store));
}
