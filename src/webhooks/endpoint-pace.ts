import { endpointKey } from '../storage/webhook-rows.js';

/**
 * How many attempts in flight each endpoint may have, found as TCP finds its window (AIMD): each
 * attempt answered 2xx quickly adds 1/window (so about one more slot per window's worth of quick
 * answers), and each that failed or was slow halves it, down to one. A receiver that answers at
 * once thus climbs to the cap (--webhook-endpoint-concurrency) within a few dozen deliveries; one
 * that slows, errs or hangs drops to one attempt at a time within a few, and holds no more slots
 * than that while it stays so.
 */

/** An answer later than this is a sign of a receiver at its limit: its window shrinks. */
export const SLOW_ANSWER_MS = 1_000;
/** A window no endpoint has been seen with starts here (capped by the setting). */
const INITIAL_WINDOW = 4;
/** An endpoint idle this long starts over at the initial window (and is forgotten). */
const FORGET_AFTER_MS = 60_000;

interface Pace {
  account: string;
  endpointId: string;
  window: number;
  lastAnswerAt: number;
}

export class EndpointPaces {
  readonly initial: number;
  private readonly paces = new Map<string, Pace>();

  constructor(private readonly max: number) {
    this.initial = Math.min(INITIAL_WINDOW, max);
  }

  /** How many attempts the endpoint (its `endpointKey`) may have in flight. */
  limit(key: string): number {
    return Math.floor(this.paces.get(key)?.window ?? this.initial);
  }

  /** The endpoints whose window is not the initial one, each seen within FORGET_AFTER_MS (older ones are forgotten). */
  known(): Map<string, { account: string; endpointId: string }> {
    const now = Date.now();
    for (const [key, pace] of this.paces) if (now - pace.lastAnswerAt > FORGET_AFTER_MS) this.paces.delete(key);
    return this.paces;
  }

  /** An attempt of the endpoint ended: `quick` when it was a 2xx within SLOW_ANSWER_MS. */
  answered(account: string, endpointId: string, quick: boolean) {
    const key = endpointKey(account, endpointId);
    const pace = this.paces.get(key) ?? { account, endpointId, window: this.initial, lastAnswerAt: 0 };
    pace.window = quick ? Math.min(this.max, pace.window + 1 / pace.window) : Math.max(1, pace.window / 2);
    pace.lastAnswerAt = Date.now();
    this.paces.set(key, pace);
  }
}
