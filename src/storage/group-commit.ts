import { storageCommits } from '../ops/metrics.js';
import type { InsertOutcome, PlantWrite, Storage } from './types.js';

const MAX_BATCH = 512;

/** `GROUP_COMMIT=0` (read once, here): one transaction per create; for the bench's comparison. */
const ENABLED = process.env.GROUP_COMMIT !== '0';

interface Pending {
  write: PlantWrite;
  resolve: (outcome: InsertOutcome) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: creates that arrive while the store is busy (or in the same turn of the event
 * loop) share one transaction and one durable sync. Each caller is answered only after the commit
 * that holds its write. If a batch fails, its writes are retried one by one, so a write that is
 * valid on its own never fails because of a neighbour.
 */
export function groupCommit(storage: Storage): (write: PlantWrite) => Promise<InsertOutcome> {
  if (!ENABLED) {
    return async (write) => {
      const [outcome] = await storage.insertPlants([write]);
      storageCommits.inc();
      return outcome!;
    };
  }
  let queue: Pending[] = [];
  let scheduled = false;
  let committing = false;

  async function commit(batch: Pending[]) {
    try {
      const outcomes = await storage.insertPlants(batch.map((p) => p.write));
      storageCommits.inc();
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
      const batch = queue.slice(0, MAX_BATCH);
      queue = queue.slice(batch.length);
      await commit(batch);
    }
    committing = false;
  }

  return (write) =>
    new Promise<InsertOutcome>((resolve, reject) => {
      queue.push({ write, resolve, reject });
      if (!scheduled && !committing) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
