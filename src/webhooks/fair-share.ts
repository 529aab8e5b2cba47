import type { ClaimShare } from '../storage/types/webhooks.js';

/**
 * The fairness of delivery: one receiver's backlog, or one receiver that hangs, cannot take every
 * slot of the deliverer from the others. The rules are here; storage is handed their numbers
 * (`ClaimShare`) and keeps to them in its claim.
 */

/**
 * One endpoint's attempts in flight are at most this share of --webhook-concurrency (at least one):
 * a receiver that hangs, with a backlog, holds a quarter of the slots until the timeout, not all.
 */
const ENDPOINT_SHARE = 1 / 4;

/** One endpoint as a map key: its account and id, neither able to pass for part of the other. */
export function endpointKey(account: string, endpointId: string): string {
  return JSON.stringify([account, endpointId]);
}

/**
 * How many due rows a claim of `limit` reads to find `limit` that keep to `perEndpoint`: room for
 * several endpoints when the oldest due rows are all one endpoint's backlog.
 */
export function claimWindow(limit: number, perEndpoint: number): number {
  return limit <= perEndpoint ? limit : 4 * limit;
}

/** The attempts in flight of each endpoint, and the share a claim keeps to because of them. */
export class EndpointShares {
  readonly perEndpoint: number;
  private readonly inFlight = new Map<string, { account: string; endpointId: string; count: number }>();

  constructor(concurrency: number) {
    this.perEndpoint = Math.max(1, Math.floor(concurrency * ENDPOINT_SHARE));
  }

  /** What a claim of up to `limit` deliveries may take: none of the endpoints already at their share. */
  claimShare(limit: number): ClaimShare {
    return {
      perEndpoint: this.perEndpoint,
      window: claimWindow(limit, this.perEndpoint),
      busy: [...this.inFlight.values()].filter((e) => e.count >= this.perEndpoint),
    };
  }

  /** Counts an attempt of the endpoint until `work` settles. */
  track(account: string, endpointId: string, work: Promise<unknown>) {
    const key = endpointKey(account, endpointId);
    const endpoint = this.inFlight.get(key) ?? { account, endpointId, count: 0 };
    endpoint.count++;
    this.inFlight.set(key, endpoint);
    void work.finally(() => {
      if (--endpoint.count === 0) this.inFlight.delete(key);
    });
  }
}
