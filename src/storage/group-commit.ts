import { untilAborted } from '../deadline.js';
import type { Storage } from './types.js';
import { outcomeUnknown } from './unavailable.js';
import type { ChangeOutcome, PlantChange } from './types/plants.js';

/** At most this many changes per transaction: one commit never holds the store (or the event loop) for long. */
const MAX_BATCH = 512;
/**
 * And at most this many plants written (a batch of POST /plants/batch counts its items): several
 * batches share a commit, but hundreds of them (half a million plants) never make one transaction.
 */
const MAX_PLANTS = 4_096;

const plantsOf = (change: PlantChange) => (change.kind === 'create-many' ? change.plants.length : 1);

/** The next transaction's changes: the first always, then as many as the bounds allow. */
function nextBatch(queue: Pending[]): Pending[] {
  let count = 1;
  let plants = plantsOf(queue[0]!.change);
  while (count < queue.length && count < MAX_BATCH) {
    plants += plantsOf(queue[count]!.change);
    if (plants > MAX_PLANTS) break;
    count++;
  }
  return queue.splice(0, count);
}

/**
 * Who above storage wants to know of its writes (metrics, the plants' page cache), told without
 * storage knowing who they are.
 */
export interface CommitObserver {
  /**
   * The accounts a transaction wrote (or tried to): told as soon as `applyChanges` has returned
   * (SQLite's inline writer has committed by then) and again when it has settled (PostgreSQL, or
   * SQLite's writer thread, commit later), so that nothing read before either moment passes for newer.
   */
  wrote?(accounts: ReadonlySet<string>): void;
  /** A transaction committed (one durable sync). */
  committed?(): void;
}

interface Pending {
  change: PlantChange;
  /** The request's deadline: once it aborts, the change is no one's to commit unless a commit holds it already. */
  signal: AbortSignal | null;
  resolve: (outcome: ChangeOutcome) => void;
  reject: (error: unknown) => void;
}

/** A change enqueued, answered once its commit is durable; `signal` its request's deadline (none: no deadline). */
export type Write = (change: PlantChange, signal?: AbortSignal | null) => Promise<ChangeOutcome>;

/**
 * Group commit: concurrent creates, updates and deletes share one transaction and one durable sync.
 *
 * The batching window is the rest of the current turn of the event loop: the first change queued
 * schedules a flush with `setImmediate`, so every request parsed in the same poll phase joins it,
 * and no timer ever delays a lone change. While a commit is in flight (PostgreSQL commits are
 * asynchronous, and so are SQLite's in its writer thread), new changes queue up and form the next
 * batch; with `--sqlite-writer inline` the commit holds the event loop, and the requests that
 * arrive meanwhile are all read in the next turn. Either way they share the next commit: the
 * slower the fsync, the larger the batches (self-clocking), each bounded by MAX_BATCH and MAX_PLANTS.
 *
 * An engine may run several such transactions at once (`commitsAtOnce`, PostgreSQL: 2), so that
 * one is written while another waits for its commit; batches then start in the order their
 * changes arrived but may commit in another order. A change is still ordered after every change
 * acknowledged before it arrived (that one's commit had returned before this one's batch began).
 *
 * Changes apply in the order they arrived, each with its own outcome. Each caller is answered only
 * after the commit that holds its change (and the webhook events it queued) is durable. If a batch
 * fails, its changes are retried one by one, so a change that is valid on its own never fails
 * because of a neighbour; unless its outcome is unknown (the database cut off or silent), when
 * each caller is told so instead.
 *
 * A change whose request's deadline passes (its `signal` aborts) is answered with the signal's
 * reason (the 503) at once. If it was still queued, or waiting for its retry alone, it is dropped:
 * no commit after its answer writes it. One a commit holds already goes on; the 503 says its
 * outcome is unknown, and an identical retry replays. `observer` is told of each write and commit (see CommitObserver).
 * With `enabled` false (`--group-commit off`), every change is its own transaction: the bench's baseline.
 */
export function groupCommit(
  storage: Pick<Storage, 'applyChanges' | 'commitsAtOnce'>,
  { enabled = true, observer = {} }: { enabled?: boolean; observer?: CommitObserver } = {},
): Write {
  const atOnce = storage.commitsAtOnce ?? 1;
  const { wrote, committed } = observer;
  const apply = (changes: PlantChange[]): Promise<ChangeOutcome[]> => {
    if (wrote === undefined) return storage.applyChanges(changes);
    const accounts = new Set(changes.map((change) => change.account));
    const applied = storage.applyChanges(changes);
    wrote(accounts);
    return applied.finally(() => wrote(accounts));
  };
  if (!enabled) {
    const one = async (change: PlantChange) => {
      const [outcome] = await apply([change]);
      committed?.();
      return outcome!;
    };
    // No queue: a change is in its commit at once (the driver's pool may still hold it a moment).
    return (change, signal = null) =>
      signal?.aborted ? Promise.reject(signal.reason as Error) : untilAborted(one(change), signal);
  }
  const queue: Pending[] = [];
  let scheduled = false;
  let inFlight = 0;

  async function commit(batch: Pending[]) {
    try {
      const outcomes = await apply(batch.map((p) => p.change));
      committed?.();
      batch.forEach((p, i) => {
        p.resolve(outcomes[i]!);
      });
    } catch (error) {
      // The store could not be reached, or did not answer: the commit may have happened or not,
      // so trying each change again could answer it twice (a DELETE found gone: 404). Each caller
      // is told 503 instead, and an identical retry of a create or a batch replays.
      if (batch.length === 1 || outcomeUnknown(error)) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      for (const pending of batch) if (!pending.signal?.aborted) await commit([pending]);
    }
  }

  /** Starts transactions while changes wait and fewer than `atOnce` are in flight; each one's end starts the next. */
  function flush() {
    scheduled = false;
    while (queue.length > 0 && inFlight < atOnce) {
      inFlight++;
      void commit(nextBatch(queue)).finally(() => {
        inFlight--;
        flush();
      });
    }
  }

  return (change, signal = null) =>
    new Promise<ChangeOutcome>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const pending: Pending = { change, signal, resolve, reject };
      if (signal !== null) {
        const drop = () => {
          const at = queue.indexOf(pending);
          if (at !== -1) queue.splice(at, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', drop, { once: true });
        const settled = () => signal.removeEventListener('abort', drop);
        pending.resolve = (outcome) => {
          settled();
          resolve(outcome);
        };
        pending.reject = (error) => {
          settled();
          reject(error);
        };
      }
      queue.push(pending);
      if (!scheduled && inFlight < atOnce) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
