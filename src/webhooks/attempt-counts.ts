import type { AttemptOutcome } from './delivery-types.js';

const OUTCOMES: readonly AttemptOutcome[] = ['delivered', 'retrying', 'failed'];

/**
 * Attempts by outcome, in memory the delivery thread shares with the event loop: the deliverer
 * adds one per attempt, /metrics reads the totals at each scrape. A message per attempt instead
 * would wake the event loop once per delivery.
 */
export class AttemptCounts {
  private readonly totals: BigInt64Array;

  constructor(readonly shared = new SharedArrayBuffer(8 * OUTCOMES.length)) {
    this.totals = new BigInt64Array(shared);
  }

  add(outcome: AttemptOutcome) {
    Atomics.add(this.totals, OUTCOMES.indexOf(outcome), 1n);
  }

  read(): Array<[AttemptOutcome, number]> {
    return OUTCOMES.map((outcome, i) => [outcome, Number(Atomics.load(this.totals, i))]);
  }
}
