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
  { id: number; outcomes: SentOutcome[] } | { id: number; error: { message: string; code: string | undefined } };

/**
 * What crosses back for a create that inserted the very plant it was sent: the main thread holds
 * that plant already. A message is a structured clone, and rebuilding a plant object on the other
 * side was a visible part of a create's instructions (bench/analysis.md); every other outcome
 * crosses whole.
 */
const CREATED_AS_SENT = 0;
type SentOutcome = ChangeOutcome | typeof CREATED_AS_SENT;

/** The outcomes of `changes` as the writer thread sends them. */
export function outcomesToSend(changes: PlantChange[], outcomes: ChangeOutcome[]): SentOutcome[] {
  return outcomes.map((outcome, i) => {
    const change = changes[i]!;
    const asSent = change.kind === 'create' && outcome.status === 'applied' && outcome.plant === change.plant;
    return asSent ? CREATED_AS_SENT : outcome;
  });
}

/** The outcomes of `changes` from what the writer thread sent. */
export function receivedOutcomes(changes: PlantChange[], sent: SentOutcome[]): ChangeOutcome[] {
  return sent.map((outcome, i) => {
    if (outcome !== CREATED_AS_SENT) return outcome;
    return { status: 'applied', plant: (changes[i] as Extract<PlantChange, { kind: 'create' }>).plant };
  });
}
