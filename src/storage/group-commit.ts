import type { Storage } from './types.js';
import type { ChangeOutcome, PlantChange } from './types/plants.js';

/** At most this many changes per transaction: one commit never holds the store (or the event loop) for long. */
const MAX_BATCH = 512;

/**
 * Who above storage wants to know of its writes (metrics, the plants' page cache), told without
 * storage knowing who they are.
 */
export interface CommitObserver {
  /**
   * The accounts a transaction wrote (or tried to): told as soon as `applyChanges` has returned
   * (SQLite has committed by then: better-sqlite3 is synchronous) and again when it has settled
   * (an engine that commits later), so that nothing read before either moment passes for newer.
   */
  wrote?(accounts: ReadonlySet<string>): void;
  /** A transaction committed (one durable sync). */
  committed?(): void;
}

interface Pending {
  change: PlantChange;
  resolve: (outcome: ChangeOutcome) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: concurrent creates, updates and deletes share one transaction and one durable sync.
 *
 * The batching window is the rest of the current turn of the event loop: the first change queued
 * schedules a flush with `setImmediate`, so every request parsed in the same poll phase joins it,
 * and no timer ever delays a lone change. While a commit is in flight (PostgreSQL commits are
 * asynchronous), new changes queue up and form the next batch. SQLite commits synchronously, so
 * the requests that arrive during one commit are all read in the next turn and share the next
 * commit: the slower the fsync, the larger the batches (self-clocking), each bounded by MAX_BATCH.
 *
 * Changes apply in the order they arrived, each with its own outcome. Each caller is answered only
 * after the commit that holds its change (and the webhook events it queued) is durable. If a batch
 * fails, its changes are retried one by one, so a change that is valid on its own never fails
 * because of a neighbour. `observer` is told of each write and commit (see CommitObserver).
 * With `enabled` false (`--group-commit off`), every change is its own transaction: the bench's baseline.
 */
export function groupCommit(
  storage: Pick<Storage, 'applyChanges'>,
  { enabled = true, observer = {} }: { enabled?: boolean; observer?: CommitObserver } = {},
): (change: PlantChange) => Promise<ChangeOutcome> {
  const { wrote, committed } = observer;
  const apply = (changes: PlantChange[]): Promise<ChangeOutcome[]> => {
    if (wrote === undefined) return storage.applyChanges(changes);
    const accounts = new Set(changes.map((change) => change.account));
    const applied = storage.applyChanges(changes);
    wrote(accounts);
    return applied.finally(() => wrote(accounts));
  };
  if (!enabled) {
    return async (change) => {
      const [outcome] = await apply([change]);
      committed?.();
      return outcome!;
    };
  }
  const queue: Pending[] = [];
  let scheduled = false;
  let committing = false;

  async function commit(batch: Pending[]) {
    try {
      const outcomes = await apply(batch.map((p) => p.change));
      committed?.();
      batch.forEach((p, i) => p.resolve(outcomes[i]!));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      for (const pending of batch) await commit([pending]);
    }
  }

  async function flush() {
    scheduled = false;
    committing = true;
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      await commit(batch);
    }
    committing = false;
  }

  return (change) =>
    new Promise<ChangeOutcome>((resolve, reject) => {
      queue.push({ change, resolve, reject });
      if (!scheduled && !committing) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
