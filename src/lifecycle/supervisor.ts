import cluster, { type Worker } from 'node:cluster';
import pino from 'pino';
import { BAD_SETTING_EXIT, type Config } from '../config.js';
import { aggregateWorkerMetrics } from '../telemetry/cluster-metrics.js';
import { onCtrlC } from './ctrl-c.js';
import { announceFirstToken, baseUrl, FIRST_TOKEN_LOGGED } from '../auth/api-tokens.js';
import { logStart } from './start-line.js';

/** The primary's message to its workers on a Ctrl-C: stop without the drain of --shutdown-delay. */
export const STOP_WITHOUT_DRAIN = 'plant-store:stop-without-drain';

/**
 * A worker that dies is replaced after RESTART_DELAY_MS, so that one killed while serving is back
 * well within 2 s (a start takes most of that on a small host). One that keeps dying soon after
 * its start (its store cannot be opened, say) waits twice as long each time, up to
 * MAX_RESTART_DELAY_MS, rather than being forked in a loop; one that served SETTLED_MS resets it.
 */
const RESTART_DELAY_MS = 100;
const MAX_RESTART_DELAY_MS = 5_000;
const SETTLED_MS = 10_000;

/**
 * The primary of `--workers N`. It prepares the store once (`prepareStore`: migrations and the
 * first token, whose secret it returns; the store is closed again before any worker starts), forks
 * N workers on one port (node:cluster) and replaces one that dies, adds up their metrics, and on
 * SIGTERM passes SIGTERM on (each worker drains, then stops: lifecycle/graceful-stop.ts), on a Ctrl-C
 * tells them to stop without the drain, and exits when the last worker has: 0 if all stopped
 * cleanly. A second SIGTERM is passed on too (a worker then exits at once, 1); a second Ctrl-C
 * (lifecycle/ctrl-c.ts) kills them and exits 1.
 * Its lines are JSON on standard output, like the workers', and its "stopped" is the last.
 */
export async function supervise(config: Config, prepareStore: (later: StoreLater) => Promise<string | null>) {
  const log = pino({ level: config.logLevel }, pino.destination({ dest: 1, sync: true }));
  logStart(log, config);
  let listening: string | null = null;
  // The first-start token, made at start or once a late database answers: announced when both it
  // and the address are known, whichever comes last.
  let token: string | null = null;
  const announce = () => {
    if (token !== null && listening !== null) announceFirstToken(token, listening);
  };
  const tokenMade = (made: string) => {
    log.info({ account: 'default' }, FIRST_TOKEN_LOGGED);
    token = made;
    announce();
  };
  let stopping = false;
  let exitCode = 0;
  const workers = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
  // Worker processes forked and not yet exited: the primary's "stopped" waits for every one.
  // `cluster.workers` is not that count: Node drops a worker from it when both its process has
  // exited and its IPC channel has closed, two events that come in either order.
  let running = 0;
  const forkedAt = new Map<number, number>();
  cluster.on('fork', (worker) => {
    running++;
    forkedAt.set(worker.id, Date.now());
  });
  let nextRestartDelay = RESTART_DELAY_MS;
  const stopped = () => {
    log.info('stopped');
    process.exit(exitCode);
  };
  // A worker hears the message once it listens for it, which it does before it listens on the port:
  // one still starting at a Ctrl-C is told again when it listens.
  let drain = true;
  const stopWithoutDrain = (worker: Worker) => {
    // A worker may be exiting already (the terminal sent it the Ctrl-C too): its channel can close
    // between the check and the write, and a send without a callback would throw EPIPE here.
    if (worker.isConnected()) worker.send(STOP_WITHOUT_DRAIN, () => {});
  };
  const stop = (why: { signal: string } | { reason: string }) => {
    if (stopping) return;
    stopping = true;
    drain = 'signal' in why && why.signal === 'SIGTERM';
    log.info(why, `stopping: the workers ${drain ? 'drain, then ' : ''}finish their in-flight requests`);
    if (running === 0) stopped();
    for (const worker of workers()) {
      if (drain) worker.process.kill('SIGTERM');
      else stopWithoutDrain(worker);
    }
  };

  process.on('SIGTERM', () => {
    if (!stopping) return stop({ signal: 'SIGTERM' });
    log.error('second SIGTERM: the workers stop now');
    exitCode = 1;
    for (const worker of workers()) worker.process.kill('SIGTERM');
  });
  // The workers ignore SIGINT (the terminal's Ctrl-C reaches them too): this process decides. Its
  // listener comes before the store is prepared: a Ctrl-C then stops the start, where it killed the
  // process by signal.
  onCtrlC({
    stop: () => stop({ signal: 'SIGINT' }),
    force: () => {
      log.error('second SIGINT, exiting');
      for (const worker of workers()) worker.process.kill('SIGKILL');
      process.exit(1);
    },
  });
  const firstToken = await prepareStore({
    token: tokenMade,
    failed(reason) {
      log.error({ reason }, 'database: refused for good; stopping');
      process.stderr.write(`plant-store: ${reason}\n`);
      exitCode = 1;
      stop({ reason });
    },
  });
  if (firstToken !== null) tokenMade(firstToken);
  aggregateWorkerMetrics();

  // Workers that have listened: one killed by a signal before it did had nothing in flight.
  const served = new Set<number>();
  cluster.on('listening', (worker) => {
    served.add(worker.id);
    if (stopping && !drain) stopWithoutDrain(worker);
  });
  cluster.once('listening', (_worker, address) => {
    listening = baseUrl(address.address ?? config.host, address.port);
    announce();
  });
  cluster.on('exit', (worker, code, signal) => {
    running--;
    // Killed by the SIGTERM itself, or by a signal before it served: the terminal's Ctrl-C reaches
    // every process of the group, a worker still starting included, before it ignores it (server.ts).
    const hadServed = served.delete(worker.id);
    const killedWithNothingInFlight = signal === 'SIGTERM' || (signal !== null && !hadServed);
    // A worker refused a setting (say the port is taken): another would too, so give up.
    if (code === BAD_SETTING_EXIT && !stopping) {
      exitCode = BAD_SETTING_EXIT;
      stop({ reason: 'a worker refused its settings' });
    } else if (stopping && code !== 0 && !killedWithNothingInFlight) {
      log.error({ worker: worker.id, workerPid: worker.process.pid, code, signal }, 'a worker did not stop cleanly');
      exitCode ||= 1;
    }
    if (stopping) {
      if (running === 0) stopped();
      return;
    }
    const settled = Date.now() - (forkedAt.get(worker.id) ?? 0) >= SETTLED_MS;
    forkedAt.delete(worker.id);
    const delay = settled ? RESTART_DELAY_MS : nextRestartDelay;
    nextRestartDelay = Math.min(delay * 2, MAX_RESTART_DELAY_MS);
    log.error(
      { worker: worker.id, workerPid: worker.process.pid, code, signal },
      `worker exited; starting another in ${delay} ms`,
    );
    setTimeout(() => stopping || cluster.fork(), delay);
  });
  for (let i = 0; i < config.workers; i++) cluster.fork();
}

/**
 * What the primary learns after its workers started, when the database did not answer at start:
 * the first token made once it does, or an error that no retry can mend (the primary then stops).
 */
export interface StoreLater {
  token(token: string): void;
  failed(reason: string): void;
}
