import type { ChangeOutcome, PlantChange } from '../types/plants.js';

/**
 * What the event loop and the SQLite writer thread (writer-thread.ts, writer-worker.ts) send each
 * other: both ends import it from here, neither from the other.
 */

/** What the writer thread starts with (workerData); `ownTicks` is OwnTicks' shared memory. */
export interface WriterData {
  path: string;
  feed: boolean;
  ownTicks: SharedArrayBuffer;
}
export type WriterRequest = { id: number; changes: PlantChange[] } | { id: number; probe: true } | 'close';
/** A failed transaction's error as it crosses back: its message and SQLite's code (SQLITE_BUSY...). */
export type WriterReply =
  { id: number; outcomes: ChangeOutcome[] } | { id: number; error: { message: string; code: string | undefined } };
