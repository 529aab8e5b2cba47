import type { ClaimShare } from '../storage/types/webhooks.js';
import { endpointKey } from '../storage/webhook-rows.js';
import type { EndpointPaces } from './endpoint-pace.js';

/**
 * The fairness of delivery: one account's backlog, or its receivers that hang, cannot take every
 * slot of the deliverer from the other accounts, however many endpoints it has; and one endpoint
 * holds no more slots than its pace allows (endpoint-pace.ts). The rules are here; storage is
 * handed their numbers (`ClaimShare`) and keeps to them in its claim.
 */

/**
 * One account's attempts in flight are at most this share of --webhook-concurrency (at least one):
 * an account whose 16 endpoints all hang, each with a backlog, holds a quarter of the slots until
 * the timeout, and every other account has the other three quarters.
 */
const ACCOUNT_SHARE = 1 / 4;

/**
 * How many due rows a claim of `limit` reads to find `limit` that keep to the shares: room for
 * several accounts when the oldest due rows are all one account's backlog.
 */
export function claimWindow(limit: number, perEndpoint: number): number {
  return limit <= perEndpoint ? limit : 4 * limit;
}

/** The attempts in flight of each account and endpoint, and the share a claim keeps to because of them. */
export class DeliveryShares {
  readonly perAccount: number;
  private readonly endpoints = new Map<string, { account: string; endpointId: string; count: number }>();
  private readonly accounts = new Map<string, number>();

  constructor(
    concurrency: number,
    private readonly paces: EndpointPaces,
  ) {
    this.perAccount = Math.max(1, Math.floor(concurrency * ACCOUNT_SHARE));
  }

  /** What a claim of up to `limit` deliveries may take: what each account and endpoint has room for. */
  claimShare(limit: number): ClaimShare {
    const perEndpoint = Math.min(this.perAccount, this.paces.initial);
    const endpoints = new Map<string, { account: string; endpointId: string; room: number }>();
    for (const [key, { account, endpointId }] of this.paces.known()) {
      endpoints.set(key, { account, endpointId, room: Math.min(this.perAccount, this.paces.limit(key)) });
    }
    for (const [key, { account, endpointId, count }] of this.endpoints) {
      const room = Math.min(this.perAccount, this.paces.limit(key)) - count;
      endpoints.set(key, { account, endpointId, room });
    }
    return {
      perAccount: this.perAccount,
      perEndpoint,
      accounts: [...this.accounts].map(([account, count]) => ({ account, room: this.perAccount - count })),
      endpoints: [...endpoints.values()].filter((e) => e.room !== perEndpoint),
      window: claimWindow(limit, perEndpoint),
    };
  }

  /** Counts an attempt of the endpoint (and its account) until the returned function is called. */
  take(account: string, endpointId: string): () => void {
    const key = endpointKey(account, endpointId);
    const endpoint = this.endpoints.get(key) ?? { account, endpointId, count: 0 };
    endpoint.count++;
    this.endpoints.set(key, endpoint);
    this.accounts.set(account, (this.accounts.get(account) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--endpoint.count === 0) this.endpoints.delete(key);
      const left = this.accounts.get(account)! - 1;
      if (left === 0) this.accounts.delete(account);
      else this.accounts.set(account, left);
    };
  }
}
