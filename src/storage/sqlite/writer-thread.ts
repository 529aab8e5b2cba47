import { Worker } from 'node:worker_threads';
import { threadModule } from '../../thread-module.js';
import type { StoreReport } from '../types.js';
import type { ChangeOutcome, PlantChange } from '../types/plants.js';
import type { OwnTicks } from './plants-clock.js';
import type { WriterData, WriterReply, WriterRequest } from './writer-messages.js';

/** Where the store's write transactions run (index.ts chooses: this thread, or a writer thread). */
export interface Writer {
  apply(changes: PlantChange[]): Promise<ChangeOutcome[]>;
  /** A small real commit of its own (disk-watch.ts, diskProbe). */
  probe(): Promise<void>;
  /** Throws while writes cannot be made (the thread ended and is not started again yet): readiness then fails. */
  check(): void;
  /** Waits for the transactions asked so far, then lets go of the connection. */
  close(): Promise<void>;
}

interface Pending {
  resolve: (outcomes: ChangeOutcome[]) => void;
  reject: (error: Error) => void;
}

/**
 * A thread that ended is started again after this long, doubled each time it ends again before it
 * has run HEALTHY_RUN_MS (a file it cannot open), up to LAST_RESTART_MS: a thread that cannot
 * start is not started again in a tight loop. Its writes in flight are answered 503 whole (their
 * outcome is unknown: group-commit.ts does not retry them one by one).
 */
const FIRST_RESTART_MS = 50;
const LAST_RESTART_MS = 5_000;
const HEALTHY_RUN_MS = 10_000;

/**
 * The writer thread of a file-backed store (`--sqlite-writer thread`): write transactions run in
 * it, on a connection of its own, so that the event loop goes on parsing, authenticating and
 * answering while a commit waits on the disk (the fsync of every commit) or on another process's
 * write lock (up to busy_timeout, 5 s). It runs them one at a time in the order asked, and answers
 * each once its COMMIT has returned. The thread keeps the process alive only while it has work.
 *
 * A thread that ends unasked (an uncaught error, a fault of the runtime) is logged at `error` and
 * started again: the transactions it had been asked for are answered 503 (`WRITER_THREAD_ENDED`,
 * storage/unavailable.ts), since each may or may not have committed (a retry of an identical
 * create replays), and readiness fails until the new thread starts. A transaction the thread had
 * not committed is rolled back by SQLite (its WAL frames have no commit record), so nothing
 * answered 200 is lost and nothing half-written is kept.
 */
export function threadWriter(path: string, feed: boolean, own: OwnTicks, report: StoreReport): Writer {
  const data: WriterData = { path, feed, ownTicks: own.shared };
  const pending = new Map<number, Pending>();
  const whenIdle: Array<() => void> = [];
  let nextId = 0;
  /** Why writes cannot be made now: the thread ended and is being started again, or the store is closed. */
  let stopped: Error | null = null;
  let closing = false;
  let restartDelay = FIRST_RESTART_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let worker: Worker;
  let exited: Promise<void>;

  const settle = (id: number) => {
    const entry = pending.get(id);
    pending.delete(id);
    if (pending.size === 0) {
      worker.unref();
      for (const idle of whenIdle.splice(0)) idle();
    }
    return entry;
  };

  function start() {
    const thread = new Worker(threadModule('writer-worker', import.meta.url), { workerData: data });
    const startedAt = performance.now();
    thread.unref();
    worker = thread;
    stopped = null;
    exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    thread.on('message', (reply: WriterReply) => {
      const entry = settle(reply.id);
      if (entry === undefined) return;
      if ('outcomes' in reply) return entry.resolve(reply.outcomes);
      // With SQLite's code, so that a busy store or a full disk is still a 503 (storage/unavailable.ts).
      const error = new Error(reply.error.message);
      if (reply.error.code !== undefined) Object.assign(error, { code: reply.error.code });
      entry.reject(error);
    });
    let failure: Error | undefined;
    thread.on('error', (error) => (failure = error));
    thread.on('exit', (exitCode) => {
      const error = Object.assign(new Error(`the SQLite writer thread ended (exit code ${exitCode})`), {
        code: 'WRITER_THREAD_ENDED',
      });
      stopped ??= error;
      for (const id of [...pending.keys()]) settle(id)!.reject(error);
      // It may have ended inside a transaction, which it will never leave.
      own.abandoned();
      if (closing) return;
      restartDelay = performance.now() - startedAt >= HEALTHY_RUN_MS ? FIRST_RESTART_MS : restartDelay;
      report.log(
        'error',
        { err: failure, exitCode, restartInMs: restartDelay },
        `the SQLite writer thread ended; its writes in flight were answered 503; starting another in ${restartDelay} ms`,
      );
      restartTimer = setTimeout(() => closing || start(), restartDelay);
      restartDelay = Math.min(restartDelay * 2, LAST_RESTART_MS);
    });
  }

  function ask(request: { changes: PlantChange[] } | { probe: true }): Promise<ChangeOutcome[]> {
    if (stopped !== null) return Promise.reject(stopped);
    const id = nextId++;
    if (pending.size === 0) worker.ref();
    worker.postMessage({ id, ...request } satisfies WriterRequest);
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
  }

  start();
  return {
    check() {
      if (stopped !== null) throw stopped;
    },
    apply(changes) {
      return ask({ changes });
    },
    async probe() {
      await ask({ probe: true });
    },
    async close() {
      if (pending.size > 0) await new Promise<void>((resolve) => whenIdle.push(resolve));
      closing = true;
      clearTimeout(restartTimer);
      stopped = new Error('the store is closed');
      worker.ref(); // until it has ended
      worker.postMessage('close' satisfies WriterRequest);
      await exited;
    },
  };
}
