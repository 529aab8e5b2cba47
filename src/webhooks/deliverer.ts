import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { ClaimedDelivery, DeliveryStorage } from '../storage/types/webhooks.js';
import type { AddressGuard } from './address-guard.js';
import { attempt, receiverAgents, type ReceiverAgents } from './attempt.js';
import type { AttemptCounts } from './attempt-counts.js';
import type { DeliveryLog, DeliverySettings } from './delivery-types.js';
import { EndpointShares } from './fair-share.js';
import { RefusalLog } from './refusal-log.js';
import { ResultWriter } from './result-writer.js';
import { afterAttempt } from './retry.js';
import { signatureHeader, signingSecrets } from './signer.js';

export interface DelivererOptions extends DeliverySettings {
  guard: AddressGuard;
  log: DeliveryLog;
  attempts: AttemptCounts;
  /** True while the API needs all of the process's CPU: deliveries then give way (see `run`). */
  apiBusy: () => boolean;
}

/** How often an idle deliverer looks for due events: new events go out within this. */
const POLL_MS = 250;
/** After a slot frees, a short wait so that a claim takes several due events rather than one. */
const GATHER_MS = 10;
const PRUNE_EVERY_MS = 60_000;
/** While the API is busy, one claim (of at most --webhook-concurrency events) per this interval. */
const BUSY_CLAIM_EVERY_MS = 1_000;

export const GONE_REASON = 'the receiver answered 410 Gone, so the endpoint was disabled';

/**
 * Sends the outbox, off the request path, in every server process: in a thread of its own
 * (delivery-thread.ts), or on the event loop for a store no other thread can reach. Each round leases due
 * deliveries to this process (see `WebhookStorage.claimDeliveries`), at most `concurrency` in
 * flight, and writes each attempt's result while the lease is still its own. A process that
 * dies mid-attempt leaves its leases to expire; another process then makes the attempt again,
 * which is the one case where a receiver sees an event twice.
 */
export class Deliverer {
  private readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts in flight per endpoint, and how many one endpoint may have (see fair-share.ts). */
  private readonly shares: EndpointShares;
  private readonly agents: ReceiverAgents;
  private readonly refusals: RefusalLog;
  /** Long enough for an attempt (bounded by the timeout) and its result, with room for a busy event loop. */
  private readonly leaseMs: number;
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private wake: () => void = () => {};
  private pruner: NodeJS.Timeout | undefined;
  private pruning: Promise<void> = Promise.resolve();
  private lastBusyClaim = 0;
  /** The last claim failed (the store unreachable): an outage is told once, not at every poll. */
  private claimsFailing = false;
  private readonly results: ResultWriter;

  constructor(
    private readonly storage: DeliveryStorage,
    private readonly options: DelivererOptions,
  ) {
    this.agents = receiverAgents(options.guard);
    this.results = new ResultWriter(storage, this.owner, GATHER_MS);
    this.refusals = new RefusalLog(options.log);
    this.leaseMs = 2 * options.timeoutMs + 5_000;
    this.shares = new EndpointShares(options.concurrency);
  }

  start() {
    this.running = true;
    this.loop = this.run();
    const prune = () => (this.pruning = this.prune());
    prune();
    this.pruner = setInterval(prune, Math.min(PRUNE_EVERY_MS, this.options.retentionMs));
    this.pruner.unref();
  }

  /** Stops claiming and lets the attempts in flight finish (each within the timeout). */
  async stop() {
    this.running = false;
    clearInterval(this.pruner);
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.inFlight, this.pruning]);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /**
   * The API comes first: deliveries share the process's CPU with it, and sending one costs about
   * as much as a create. So while the API saturates the process, the deliverer claims one batch
   * per second at most (it never stops: events still go out, slowly), and otherwise as much as
   * the concurrency allows; a backlog built at saturation goes out when the load eases.
   */
  private async run() {
    while (this.running) {
      const busy = this.options.apiBusy();
      const mayClaim = !busy || Date.now() - this.lastBusyClaim >= BUSY_CLAIM_EVERY_MS;
      const free = mayClaim ? this.options.concurrency - this.inFlight.size : 0;
      let claimed = 0;
      if (free > 0) {
        if (busy) this.lastBusyClaim = Date.now();
        try {
          const now = Date.now();
          const share = this.shares.claimShare(free);
          const leaseUntil = new Date(now + this.leaseMs);
          const due = await this.storage.claimDeliveries(this.owner, new Date(now), leaseUntil, free, share);
          for (const delivery of due) this.track(delivery, this.deliver(delivery));
          claimed = due.length;
          this.claimsFailing = false;
        } catch (error) {
          // Once per outage: a store that is down fails every poll, several times a second.
          if (!this.claimsFailing) {
            this.options.log.warn({ err: error }, 'webhooks: could not claim due deliveries; trying again');
          }
          this.claimsFailing = true;
        }
      }
      // A full batch means more may be due: go again as soon as a slot frees. Otherwise poll.
      if (free > 0 && claimed === free && !busy) await this.nap(0);
      else await this.nap(POLL_MS);
    }
  }

  /** Waits `ms`, or less when an attempt finishes (a slot is free) or the deliverer stops. */
  private async nap(ms: number) {
    if (!this.running) return;
    if (ms > 0 || this.inFlight.size >= this.options.concurrency) {
      await new Promise<void>((resolve) => {
        const timer = ms > 0 ? setTimeout(resolve, ms) : undefined;
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = () => {};
    }
    await delay(GATHER_MS);
  }

  private track({ account, endpointId }: ClaimedDelivery, work: Promise<void>) {
    this.shares.track(account, endpointId, work);
    this.inFlight.add(work);
    void work.finally(() => {
      this.inFlight.delete(work);
      this.wake();
    });
  }

  private async deliver(delivery: ClaimedDelivery) {
    const { account, endpointId, eventId } = delivery;
    try {
      const now = new Date();
      const timestamp = Math.floor(now.getTime() / 1000);
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'plant-store-webhooks',
        'plant-store-event': delivery.eventType,
        'webhook-id': eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(signingSecrets(delivery, now), eventId, timestamp, delivery.payload),
      };
      const result = await attempt(delivery.url, headers, delivery.payload, {
        timeoutMs: this.options.timeoutMs,
        guard: this.options.guard,
        agents: this.agents,
      });
      this.refusals.note(account, endpointId, result);
      const record = afterAttempt(result, delivery.attempts, this.options.retrySchedule, Date.now());
      await this.results.record({ key: { account, endpointId, eventId }, record });
      this.options.attempts.add(record.state === 'pending' ? 'retrying' : record.state);
      if (result.status === 410) await this.storage.disableEndpoint(account, endpointId, GONE_REASON);
    } catch (error) {
      // The lease runs out and the attempt is made again, here or elsewhere.
      this.options.log.warn({ err: error, endpointId, eventId }, 'webhooks: could not record an attempt');
    }
  }

  private async prune() {
    try {
      await this.storage.pruneDeliveries(new Date(Date.now() - this.options.retentionMs));
    } catch (error) {
      this.options.log.warn({ err: error }, 'webhooks: could not remove old deliveries');
    }
  }
}
