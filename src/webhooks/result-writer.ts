import { setTimeout as delay } from 'node:timers/promises';
import type { DeliveryStorage } from '../storage/types/webhooks.js';

type AttemptResultRow = Parameters<DeliveryStorage['recordAttempts']>[1][number];

interface ResultBatch {
  results: AttemptResultRow[];
  written: Promise<void>;
}

/**
 * The results of attempts, written together: each waits `gatherMs` for company, and a batch is one
 * transaction: far fewer commits (on SQLite, far fewer pages written to the WAL) than one per attempt.
 */
export class ResultWriter {
  private batch: ResultBatch | null = null;

  constructor(
    private readonly storage: DeliveryStorage,
    private readonly owner: string,
    private readonly gatherMs: number,
  ) {}

  /** Resolves once this result is written. */
  record(result: AttemptResultRow): Promise<void> {
    if (this.batch === null) {
      const batch: ResultBatch = { results: [], written: delay(this.gatherMs).then(() => this.write(batch)) };
      this.batch = batch;
    }
    this.batch.results.push(result);
    return this.batch.written;
  }

  private async write(batch: ResultBatch) {
    if (this.batch === batch) this.batch = null;
    await this.storage.recordAttempts(this.owner, batch.results);
  }
}
