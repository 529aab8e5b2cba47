import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { ClaimedDelivery, DeliveryStorage } from '../storage/types/webhooks.js';
import type { AddressGuard } from './address-guard.js';
import { attempt, receiverAgents, type AttemptResult, type ReceiverAgents } from './attempt.js';
import type { AttemptCounts } from './attempt-counts.js';
import type { DeliveryLog, DeliverySettings } from './delivery-types.js';
import { EndpointPaces, SLOW_ANSWER_MS } from './endpoint-pace.js';
import { DeliveryShares } from './fair-share.js';
import { RefusalLog } from './refusal-log.js';
import { ResultWriter } from './result-writer.js';
import { afterAttempt, delivered } from './retry.js';
import { signedHeaders } from './signer.js';

export interface DelivererOptions extends DeliverySettings {
  guard: AddressGuard;
  log: DeliveryLog;
  attempts: AttemptCounts;
  /** True while the API needs all of the process's CPU: deliveries then give way (see `run`). */
  apiBusy: () => boolean;
}

/**
 * How often a deliverer with nothing due looks again when no commit of this process woke it: the
 * events of other processes and instances, and retries coming due, go out within this.
 */
const POLL_MS = 250;
/**
 * While attempts are in flight, a freed slot is filled after this long, so that the slots freed
 * meanwhile are filled by one claim (one transaction) rather than one each.
 */
const GATHER_MS = 3;
/** Results are written together when they end within this of each other (result-writer.ts). */
const RESULTS_GATHER_MS = 10;
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
  /** Attempts in flight; their results may still be being written (`writing`) once they leave. */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly writing = new Set<Promise<void>>();
  /** Attempts in flight per account and endpoint, and how many each may have (see fair-share.ts). */
  private readonly shares: DeliveryShares;
  private readonly paces: EndpointPaces;
  private readonly agents: ReceiverAgents;
  private readonly refusals: RefusalLog;
  /** Long enough for an attempt (bounded by the timeout) and its result, with room for a busy event loop. */
  private readonly leaseMs: number;
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  /** Ends the deliverer's pause at once (a slot freed, a commit, or it stops)... */
  private wake: () => void = () => {};
  /** ...or, when it is not pausing, makes the next pause end at once: nothing that happened meanwhile is missed. */
  private woken = false;
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
    this.results = new ResultWriter(storage, this.owner, RESULTS_GATHER_MS);
    this.refusals = new RefusalLog(options.log);
    this.leaseMs = 2 * options.timeoutMs + 5_000;
    this.paces = new EndpointPaces(options.endpointConcurrency);
    this.shares = new DeliveryShares(options.concurrency, this.paces);
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
    this.poke();
    await this.loop;
    await Promise.allSettled([...this.inFlight, this.pruning]);
    await Promise.allSettled([...this.writing]);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /**
   * The API comes first: deliveries share the process's CPU with it, and sending one costs about
   * as much as a create. So while the API saturates the process, the deliverer claims one batch
   * per second at most (it never stops: events still go out, slowly), and otherwise as much as
   * the slots and shares allow: a slot that frees is filled at once (within GATHER_MS); with
   * nothing it may take, it waits for a commit of this process, a slot to free, or POLL_MS.
   */
  private async run() {
    while (this.running) {
      const busy = this.options.apiBusy();
      const mayClaim = !busy || Date.now() - this.lastBusyClaim >= BUSY_CLAIM_EVERY_MS;
      const free = mayClaim ? this.options.concurrency - this.inFlight.size : 0;
      let claimed = 0;
      if (free > 0) {
        if (busy) this.lastBusyClaim = Date.now();
        claimed = await this.claim(free);
      }
      // A claim that filled every free slot may have left more due: go again at once. One that
      // filled fewer took all that may go now: wait for a commit, a freed slot (room back for its
      // account and endpoint) or POLL_MS. So does a deliverer with no free slot.
      if (busy || claimed < free || this.inFlight.size >= this.options.concurrency) await this.pause(POLL_MS);
      if (this.inFlight.size > 0) await delay(GATHER_MS);
    }
  }

  /** This process committed events: the deliverer looks for them at once. */
  poke() {
    this.woken = true;
    this.wake();
  }

  /** Leases up to `free` due deliveries and starts them; how many. */
  private async claim(free: number): Promise<number> {
    try {
      const now = Date.now();
      const share = this.shares.claimShare(free);
      const leaseUntil = new Date(now + this.leaseMs);
      const due = await this.storage.claimDeliveries(this.owner, new Date(now), leaseUntil, free, share);
      for (const delivery of due) this.send(delivery);
      this.claimsFailing = false;
      return due.length;
    } catch (error) {
      // Once per outage: a store that is down fails every poll, several times a second.
      if (!this.claimsFailing) {
        this.options.log.warn({ err: error }, 'webhooks: could not claim due deliveries; trying again');
      }
      this.claimsFailing = true;
      return 0;
    }
  }

  /** Waits `ms`, or less when woken (see `wake`). */
  private async pause(ms: number) {
    if (!this.running || this.woken) {
      this.woken = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = () => {};
    this.woken = false;
  }

  /**
   * Starts one attempt: it holds its slot and its account's and endpoint's share until it ends,
   * and its result is written after (the lease keeps the event this process's meanwhile).
   */
  private send(delivery: ClaimedDelivery) {
    const { account, endpointId } = delivery;
    const release = this.shares.take(account, endpointId);
    const attempted = this.attempt(delivery);
    const ended = attempted.then(() => {});
    this.inFlight.add(ended);
    void ended.finally(() => {
      release();
      this.inFlight.delete(ended);
      this.poke();
    });
    const written = attempted.then((result) => (result === null ? undefined : this.record(delivery, result)));
    this.writing.add(written);
    void written.finally(() => this.writing.delete(written));
  }

  /** One POST, signed for this attempt, and its pace noted; null when it could not even be made. Never rejects. */
  private async attempt(delivery: ClaimedDelivery): Promise<AttemptResult | null> {
    const { account, endpointId, eventId } = delivery;
    try {
      const now = new Date();
      const result = await attempt(delivery.url, signedHeaders(delivery, now), delivery.payload, {
        timeoutMs: this.options.timeoutMs,
        guard: this.options.guard,
        agents: this.agents,
      });
      const quick = delivered(result) && Date.now() - now.getTime() < SLOW_ANSWER_MS;
      this.paces.answered(account, endpointId, quick);
      return result;
    } catch (error) {
      // The lease runs out and the attempt is made again, here or elsewhere.
      this.options.log.warn({ err: error, endpointId, eventId }, 'webhooks: could not make an attempt');
      return null;
    }
  }

  /** Writes what came of the attempt (with others: result-writer.ts). Never rejects. */
  private async record(delivery: ClaimedDelivery, result: AttemptResult) {
    const { account, endpointId, eventId, row } = delivery;
    try {
      this.refusals.note(account, endpointId, result);
      const record = afterAttempt(result, delivery.attempts, this.options.retrySchedule, Date.now());
      await this.results.record({ key: { account, endpointId, eventId, row }, record });
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
