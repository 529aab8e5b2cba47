import { Worker } from 'node:worker_threads';
import { threadModule } from '../../thread-module.js';
import type { ChangeOutcome, PlantChange } from '../types/plants.js';
import type { OwnTicks } from './plants-clock.js';

/** Where the store's write transactions run (index.ts chooses: this thread, or a writer thread). */
export interface Writer {
  apply(changes: PlantChange[]): Promise<ChangeOutcome[]>;
  /** Throws when writes can no longer be made (the thread ended): readiness then fails. */
  check(): void;
  /** Waits for the transactions asked so far, then lets go of the connection. */
  close(): Promise<void>;
}

/** What the writer thread starts with (workerData); `ownTicks` is OwnTicks' shared memory. */
export interface WriterData {
  path: string;
  feed: boolean;
  ownTicks: SharedArrayBuffer;
}
export type WriterRequest = { id: number; changes: PlantChange[] } | 'close';
/** A failed transaction's error as it crosses back: its message and SQLite's code (SQLITE_BUSY...). */
export type WriterReply =
  { id: number; outcomes: ChangeOutcome[] } | { id: number; error: { message: string; code: string | undefined } };

interface Pending {
  resolve: (outcomes: ChangeOutcome[]) => void;
  reject: (error: Error) => void;
}

/**
 * The writer thread of a file-backed store (`--sqlite-writer thread`): write transactions run in
 * it, on a connection of its own, so that the event loop goes on parsing, authenticating and
 * answering while a commit waits on the disk (the fsync of every commit) or on another process's
 * write lock (up to busy_timeout, 5 s). It runs them one at a time in the order asked, and answers
 * each once its COMMIT has returned. The thread keeps the process alive only while it has work.
 */
export function threadWriter(path: string, feed: boolean, own: OwnTicks): Writer {
  const data: WriterData = { path, feed, ownTicks: own.shared };
  const worker = new Worker(threadModule('writer-worker', import.meta.url), { workerData: data });
  worker.unref();
  const pending = new Map<number, Pending>();
  const whenIdle: Array<() => void> = [];
  let nextId = 0;
  let stopped: Error | null = null;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));

  const settle = (id: number) => {
    const entry = pending.get(id)!;
    pending.delete(id);
    if (pending.size === 0) {
      worker.unref();
      for (const idle of whenIdle.splice(0)) idle();
    }
    return entry;
  };
  worker.on('message', (reply: WriterReply) => {
    const { resolve, reject } = settle(reply.id);
    if ('outcomes' in reply) return resolve(reply.outcomes);
    // With SQLite's code, so that a busy store is still a 503 (storage/unavailable.ts).
    const error = new Error(reply.error.message);
    if (reply.error.code !== undefined) Object.assign(error, { code: reply.error.code });
    reject(error);
  });
  // The thread failed to start (the file cannot be opened) or ended: nothing asked of it will be answered.
  const stop = (error: Error) => {
    stopped ??= error;
    for (const id of [...pending.keys()]) settle(id).reject(error);
  };
  worker.on('error', stop);
  worker.on('exit', (code) => stop(new Error(`the SQLite writer thread has stopped (exit code ${code})`)));

  return {
    check() {
      if (stopped !== null) throw stopped;
    },
    apply(changes) {
      if (stopped !== null) return Promise.reject(stopped);
      const id = nextId++;
      if (pending.size === 0) worker.ref();
      const request: WriterRequest = { id, changes };
      worker.postMessage(request);
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    async close() {
      if (pending.size > 0) await new Promise<void>((resolve) => whenIdle.push(resolve));
      stop(new Error('the store is closed'));
      worker.ref(); // until it has ended
      worker.postMessage('close' satisfies WriterRequest);
      await exited;
    },
  };
}
