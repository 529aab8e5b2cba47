import type { Server } from 'node:http';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { threadCpuMicros } from '../telemetry/thread-cpu.js';
import type { DeliverySource } from '../storage/types/webhooks.js';
import { threadModule } from '../thread-module.js';
import type { AttemptCounts } from './attempt-counts.js';
import type { DeliveryLog, DeliverySettings } from './delivery-types.js';

/** Share of the event loop, or of the CPU the process may use, above which (with requests arriving) it counts as saturated. */
const SATURATED = 0.8;
/** Utilisation and requests are counted over windows of at least this long. */
const WINDOW_MS = 200;

/**
 * Whether the API needs all of this process's CPU right now: requests arrived during the last
 * window, and either the event loop was busy more than 80 % of it or the process used more than
 * 80 % of the `cores` it may run on, not counting `besideTheApi` (microseconds of CPU used so far by
 * work that is not the API's: the delivery thread). The second test is the one that sees a process
 * whose write transactions run in a thread of their own (sqlite/writer-thread.ts): its event loop
 * waits for commits while the core is full. Deliveries take what the API leaves: all of it between
 * requests or under a moderate load, little at saturation.
 *
 * Requests are counted as they arrive over the window, not as those in flight at the moment of
 * asking: the deliverer asks from a timer, and timers run right after the turn in which a group
 * commit answered every waiting request and before the next requests are read, so at that moment
 * nothing is ever in flight, however saturated the process.
 */
export function apiSaturation(
  server: Server,
  besideTheApi: () => number = () => 0,
  cores = availableParallelism(),
): () => boolean {
  let arrived = 0;
  server.on('request', () => {
    arrived++;
  });
  let loopMark = performance.eventLoopUtilization();
  let cpuMark = process.cpuUsage();
  let besideMark = besideTheApi();
  let markedAt = performance.now();
  let busy = false;
  return () => {
    const elapsedMs = performance.now() - markedAt;
    if (elapsedMs >= WINDOW_MS) {
      const loop = performance.eventLoopUtilization();
      const cpu = process.cpuUsage();
      const beside = besideTheApi();
      const apiCpuMicros = cpu.user - cpuMark.user + cpu.system - cpuMark.system - Math.max(0, beside - besideMark);
      const cpuShare = apiCpuMicros / 1000 / (elapsedMs * cores);
      const loopShare = performance.eventLoopUtilization(loop, loopMark).utilization;
      busy = arrived > 0 && (loopShare > SATURATED || cpuShare > SATURATED);
      arrived = 0;
      loopMark = loop;
      cpuMark = cpu;
      besideMark = beside;
      markedAt = performance.now();
    }
    return busy;
  };
}

/**
 * What the deliverer's thread starts with (workerData): `apiBusy` is one shared Int32, 1 while the
 * API is busy; `commits` one shared Int32 that the event loop raises (and notifies) after each
 * commit holding events, so that the thread claims them at once; `attempts` the AttemptCounts'
 * shared memory.
 */
export interface DeliveryThreadData {
  source: DeliverySource;
  settings: DeliverySettings;
  allowPrivate: boolean;
  apiBusy: SharedArrayBuffer;
  commits: SharedArrayBuffer;
  attempts: SharedArrayBuffer;
}
/** What the thread tells the event loop: its kernel thread id (Linux, once), or a warning for the log. */
export type DeliveryThreadMessage =
  { threadId: number } | { warn: { fields: Record<string, unknown>; message: string } };

/** How often the event loop tells the thread whether the API is busy (apiSaturation judges over 200 ms). */
const BUSY_EVERY_MS = 100;
/** A thread that ended unasked is started again after this long. */
const RESTART_AFTER_MS = 1_000;

export interface DeliveryThreadOptions {
  settings: DeliverySettings;
  allowPrivate: boolean;
  log: DeliveryLog & { error(fields: Record<string, unknown>, message: string): void };
  attempts: AttemptCounts;
  /** The server whose saturation the thread gives way to (apiSaturation). */
  server: Server;
}

/**
 * The deliverer (deliverer.ts) in a worker thread of its own, with its own connections to the
 * store (`source`): its claims, attempts, signatures and results take no turn of the event loop,
 * and on SQLite its waits for the write lock (up to busy_timeout) no longer hold requests up. On
 * Linux the thread runs at a lower priority than the API's (delivery-worker.ts). The event loop
 * keeps what only it knows or holds: whether the API is busy (shared memory, read by the thread
 * at each claim), its own commits (shared memory, which the thread waits on), the log (messages
 * from the thread) and /metrics (attempt-counts.ts).
 */
export class DeliveryThread {
  private worker: Worker | null = null;
  private readonly busy = new Int32Array(new SharedArrayBuffer(4));
  private readonly commits = new Int32Array(new SharedArrayBuffer(4));
  private busyTimer: NodeJS.Timeout | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private running = false;
  private threadId: number | null = null;
  private readonly apiBusy: () => boolean;

  constructor(
    private readonly source: DeliverySource,
    private readonly options: DeliveryThreadOptions,
  ) {
    this.apiBusy = apiSaturation(options.server, () => this.cpuMicros());
  }

  start() {
    this.running = true;
    this.busyTimer = setInterval(() => Atomics.store(this.busy, 0, this.apiBusy() ? 1 : 0), BUSY_EVERY_MS);
    this.busyTimer.unref();
    this.spawn();
  }

  /** Stops claiming, lets the attempts in flight finish (each within the timeout), and ends the thread. */
  async stop() {
    this.running = false;
    clearInterval(this.busyTimer);
    clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage('stop');
    await exited;
  }

  /** This process committed events: the thread looks for them at once (no message: a store and a notify). */
  poke() {
    Atomics.add(this.commits, 0, 1);
    Atomics.notify(this.commits, 0);
  }

  /** The CPU the thread has used, in microseconds (Linux; else 0): the API's saturation leaves it out (apiSaturation). */
  cpuMicros(): number {
    return this.threadId === null ? 0 : threadCpuMicros(this.threadId);
  }

  private spawn() {
    const data: DeliveryThreadData = {
      source: this.source,
      settings: this.options.settings,
      allowPrivate: this.options.allowPrivate,
      apiBusy: this.busy.buffer as SharedArrayBuffer,
      commits: this.commits.buffer as SharedArrayBuffer,
      attempts: this.options.attempts.shared,
    };
    const worker = new Worker(threadModule('delivery-worker', import.meta.url), { workerData: data });
    this.worker = worker;
    worker.on('message', (message: DeliveryThreadMessage) => {
      if ('threadId' in message) this.threadId = message.threadId;
      else this.options.log.warn(message.warn.fields, message.warn.message);
    });
    worker.on('error', (err) => this.options.log.error({ err }, 'webhooks: the delivery thread failed'));
    worker.on('exit', () => {
      this.worker = null;
      this.threadId = null;
      if (!this.running) return;
      this.options.log.error({}, `webhooks: the delivery thread ended; starting it again in ${RESTART_AFTER_MS} ms`);
      this.restartTimer = setTimeout(() => this.spawn(), RESTART_AFTER_MS);
      this.restartTimer.unref();
    });
  }
}
