import cluster from 'node:cluster';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app.js';
import { issueFirstToken } from './auth/api-tokens.js';
import { BAD_SETTING_EXIT, type Config } from './config.js';
import { startTracing, tracesWanted } from './ops/tracing.js';
import { openStorage } from './storage/open.js';
import type { Storage } from './storage/types.js';

const RESTART_DELAY_MS = 1_000;

function announceFirstToken(secret: string, config: Config) {
  process.stdout.write(
    `\nThe store had no API token, so one was created for account "default". It is shown only this once:\n\n` +
      `  ${secret}\n\n` +
      `Try it: curl -H "Authorization: Bearer ${secret}" http://${config.host}:${config.port}/plants\n\n`,
  );
}

function openConfiguredStorage(config: Config): Promise<Storage> {
  return openStorage(config.database, { pgPoolMax: config.pgPoolMax });
}

/** Migrations and the first token happen once, before any worker serves. */
async function prepareStore(config: Config): Promise<Storage> {
  const storage = await openConfiguredStorage(config);
  const secret = await issueFirstToken(storage);
  if (secret !== null) announceFirstToken(secret, config);
  return storage;
}

/** One process serving HTTP until SIGTERM/SIGINT; in-flight requests finish, then exit 0. */
async function serveHere(config: Config, store: Storage) {
  // Each process (each worker) exports its own spans.
  const tracing = await startTracing(config);
  const app = await buildApp({ config, storage: store, tracing });
  closeWithGrace({ delay: config.shutdownTimeout, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'stopping after an unexpected error');
    else app.log.info({ signal }, 'stopping: finishing in-flight requests');
    await app.close();
    await store.close();
    await tracing?.shutdown();
  });
  await app.listen({ port: config.port, host: config.host });
}

/** N workers on one port (node:cluster); a worker that dies is replaced. */
async function supervise(config: Config) {
  await (await prepareStore(config)).close();
  let stopping = false;
  const fork = () => cluster.fork();
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  cluster.on('exit', (worker, code, signal) => {
    // A worker refused a setting (say the port is taken): another would too, so give up.
    if (code === BAD_SETTING_EXIT && !stopping) {
      process.exitCode = BAD_SETTING_EXIT;
      stop();
    }
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit();
      return;
    }
    console.error(`worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
    setTimeout(fork, RESTART_DELAY_MS);
  });
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  for (let i = 0; i < config.workers; i++) fork();
}

export async function serve(config: Config) {
  // A bad OTEL_* setting stops here (exit 2), before the store is touched or a worker starts.
  tracesWanted();
  if (config.workers === 1) return serveHere(config, await prepareStore(config));
  if (cluster.isPrimary) return supervise(config);
  return serveHere(config, await openConfiguredStorage(config));
}
