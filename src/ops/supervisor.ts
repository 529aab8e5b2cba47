import cluster from 'node:cluster';
import pino from 'pino';
import { BAD_SETTING_EXIT, type Config } from '../config.js';
import { aggregateWorkerMetrics } from './cluster-metrics.js';
import { announceFirstToken, baseUrl, FIRST_TOKEN_LOGGED } from './first-token.js';
import { logStart } from './start-line.js';

const RESTART_DELAY_MS = 1_000;

/**
 * The primary of `--workers N`. It prepares the store once (`prepareStore`: migrations and the
 * first token, whose secret it returns; the store is closed again before any worker starts), forks
 * N workers on one port (node:cluster) and replaces one that dies, adds up their metrics, and on
 * SIGTERM/SIGINT passes SIGTERM on and exits when the last worker has: 0 if all stopped cleanly.
 * Its lines are JSON on standard output, like the workers', and its "stopped" is the last.
 */
export async function supervise(config: Config, prepareStore: () => Promise<string | null>) {
  const log = pino({ level: config.logLevel }, pino.destination({ dest: 1, sync: true }));
  logStart(log, config);
  const firstToken = await prepareStore();
  if (firstToken !== null) log.info({ account: 'default' }, FIRST_TOKEN_LOGGED);
  aggregateWorkerMetrics();

  let stopping = false;
  let exitCode = 0;
  const workers = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
  // Worker processes forked and not yet exited: the primary's "stopped" waits for every one.
  // `cluster.workers` is not that count: Node drops a worker from it when both its process has
  // exited and its IPC channel has closed, two events that come in either order.
  let running = 0;
  cluster.on('fork', () => running++);
  const stopped = () => {
    log.info('stopped');
    process.exit(exitCode);
  };
  const stop = (why: { signal: string } | { reason: string }) => {
    if (stopping) return;
    stopping = true;
    log.info(why, 'stopping: the workers finish their in-flight requests');
    if (running === 0) stopped();
    for (const worker of workers()) worker.process.kill('SIGTERM');
  };

  cluster.once('listening', (_worker, address) => {
    if (firstToken !== null) announceFirstToken(firstToken, baseUrl(address.address ?? config.host, address.port));
  });
  cluster.on('exit', (worker, code, signal) => {
    running--;
    // A worker refused a setting (say the port is taken): another would too, so give up.
    if (code === BAD_SETTING_EXIT && !stopping) {
      exitCode = BAD_SETTING_EXIT;
      stop({ reason: 'a worker refused its settings' });
    } else if (stopping && code !== 0 && signal !== 'SIGTERM') {
      // (Killed by the SIGTERM itself: it had not started serving yet.)
      log.error({ worker: worker.id, workerPid: worker.process.pid, code, signal }, 'a worker did not stop cleanly');
      exitCode ||= 1;
    }
    if (stopping) {
      if (running === 0) stopped();
      return;
    }
    log.error(
      { worker: worker.id, workerPid: worker.process.pid, code, signal },
      'worker exited; starting another in 1 s',
    );
    setTimeout(() => stopping || cluster.fork(), RESTART_DELAY_MS);
  });
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop({ signal }));
  for (let i = 0; i < config.workers; i++) cluster.fork();
}
