/** What the service keeps, and the one small interface both engines implement. */

import type { FeedStorage } from './feed-types.js';

export interface PlantRecord {
  id: bigint;
  name: string;
  tag: string | null;
}

/** A plant with its revision: a random number drawn anew at each change, the source of its ETag. */
export interface StoredPlant extends PlantRecord {
  revision: bigint;
}

/** The events a change reports to webhooks, one per change that took effect. */
export type PlantEventType = 'plant.created' | 'plant.updated' | 'plant.deleted';

/** Checked against the plant as it is inside the transaction (HTTP's If-Match). */
export type Precondition = (current: StoredPlant) => boolean;

/**
 * One write of a group-commit batch. `eventId` names the webhook event the change reports if it
 * takes effect (the receivers' deduplication key), so it is drawn before the transaction.
 */
export type PlantChange =
  | { kind: 'create'; account: string; plant: StoredPlant; eventId: string }
  | {
      kind: 'update';
      account: string;
      id: bigint;
      /** Absent fields stay as they are; `tag: null` removes the tag. */
      set: { name?: string; tag?: string | null };
      revision: bigint;
      precondition?: Precondition;
      eventId: string;
    }
  | { kind: 'delete'; account: string; id: bigint; precondition?: Precondition; eventId: string };

/**
 * - `applied`: the change took effect; `plant` is the plant as it is now (for a delete, as it was).
 * - `unchanged`: nothing to do; `plant` is the plant as it is (a create of a taken id, an update
 *   that changes no field).
 * - `missing`: the account has no plant with this id. `precondition-failed`: its precondition said no.
 */
export type ChangeOutcome =
  | { status: 'applied'; plant: StoredPlant }
  | { status: 'unchanged'; plant: StoredPlant }
  | { status: 'missing' }
  | { status: 'precondition-failed' };

export interface TokenRecord {
  id: string;
  account: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface NewToken {
  id: string;
  account: string;
  secretHash: string;
  scopes: string[];
  createdAt: Date;
  expiresAt: Date | null;
}

/** A subscriber's endpoint: where an account's events go. The secrets are apart (`EndpointSecrets`). */
export interface WebhookEndpoint {
  id: string;
  url: string;
  events: PlantEventType[];
  description: string;
  enabled: boolean;
  createdAt: Date;
}

export interface NewWebhookEndpoint extends WebhookEndpoint {
  account: string;
  secret: string;
}

/** How a claim shares the deliverer's slots among endpoints (see `claimDeliveries`). */
export interface ClaimShare {
  perEndpoint: number;
  busy: Array<{ account: string; endpointId: string }>;
}

/** Absent fields stay as they are. */
export type WebhookEndpointChanges = Partial<Pick<WebhookEndpoint, 'url' | 'events' | 'description' | 'enabled'>>;

/** The secrets an attempt is signed with: the current one, and the one it replaced while it still signs. */
export interface EndpointSecrets {
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint, as the deliveries listing shows it. */
export interface WebhookDelivery {
  eventId: string;
  eventType: PlantEventType;
  state: DeliveryState;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** Names one delivery row: an event for an endpoint of an account. */
export interface DeliveryKey {
  account: string;
  endpointId: string;
  eventId: string;
}

/** A delivery leased to one process for one attempt, with what that attempt needs. */
export interface ClaimedDelivery extends DeliveryKey, EndpointSecrets {
  eventType: PlantEventType;
  payload: string;
  /** Attempts made before this one. */
  attempts: number;
  url: string;
}

/**
 * The result of an attempt, written only while the lease is still this process's:
 * `pending` again with `nextAttemptAt` (a retry), or final (`delivered`, `failed`).
 */
export interface AttemptRecord {
  state: DeliveryState;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
}

/** The webhook endpoints and the outbox's deliveries. Storage keeps them; the rules live in src/webhooks/. */
export interface WebhookStorage {
  /** Creates it unless the account already has `maxPerAccount` endpoints (then false), atomically. */
  createEndpoint(endpoint: NewWebhookEndpoint, maxPerAccount: number): Promise<boolean>;
  listEndpoints(account: string): Promise<WebhookEndpoint[]>;
  getEndpoint(account: string, id: string): Promise<WebhookEndpoint | null>;
  /** null when the account has no such endpoint. Disabling it fails its pending deliveries with `reason`. */
  updateEndpoint(
    account: string,
    id: string,
    changes: WebhookEndpointChanges,
    reason: string,
  ): Promise<WebhookEndpoint | null>;
  /** Removes the endpoint and every delivery of it; false when there was none. */
  deleteEndpoint(account: string, id: string): Promise<boolean>;
  /** The current secret becomes the previous one until `previousUntil`; false when there is no such endpoint. */
  rotateSecret(account: string, id: string, secret: string, previousUntil: Date): Promise<boolean>;
  /** Newest first. */
  listDeliveries(account: string, endpointId: string, limit: number): Promise<WebhookDelivery[]>;
  /** Failed deliveries of the endpoint created in [since, until) become pending again, due now; how many. */
  requeueFailed(account: string, endpointId: string, since: Date, until: Date | null, now: Date): Promise<number>;

  /**
   * Leases up to `limit` due deliveries of enabled endpoints to `owner` until `leaseUntil`: due
   * pending rows whose lease is absent or expired, oldest due first. Each row goes to one claimer.
   * At most `share.perEndpoint` of one endpoint, and none of the endpoints in `share.busy`: one
   * receiver's backlog cannot take every slot from the others.
   */
  claimDeliveries(
    owner: string,
    now: Date,
    leaseUntil: Date,
    limit: number,
    share: ClaimShare,
  ): Promise<ClaimedDelivery[]>;
  /**
   * Writes the results of attempts and ends their leases, in one transaction; a delivery whose
   * lease `owner` no longer holds (another process took over) is left alone.
   */
  recordAttempts(owner: string, results: Array<{ key: DeliveryKey; record: AttemptRecord }>): Promise<void>;
  /** A receiver said 410 Gone: the endpoint is disabled and its pending deliveries fail with `reason`. */
  disableEndpoint(account: string, endpointId: string, reason: string): Promise<void>;
  /** Removes delivered and failed deliveries last changed before `before`; how many. */
  pruneDeliveries(before: Date): Promise<number>;
  /** Pending deliveries and the creation time of the oldest, for /metrics. */
  deliveryBacklog(): Promise<{ pending: number; oldestCreatedAt: Date | null }>;
}

export interface Storage extends WebhookStorage, FeedStorage {
  readonly engine: 'sqlite' | 'postgres';

  /**
   * Applies every change in order in one transaction (one durable commit), and in the same
   * transaction queues the webhook deliveries of each change that took effect (the outbox) and
   * appends its event to the change feed (unless the store was opened with the feed off).
   * Results are in input order; a change that cannot apply is an outcome, not an error.
   */
  applyChanges(changes: PlantChange[]): Promise<ChangeOutcome[]>;
  getPlant(account: string, id: bigint): Promise<StoredPlant | null>;
  /** Up to `limit` plants with id > `afterId`, ascending by id. */
  listPlants(account: string, afterId: bigint | null, limit: number): Promise<PlantRecord[]>;
  /** Every plant with id > `afterId`, ascending, in chunks, without holding them all in memory. */
  streamPlants(account: string, afterId: bigint | null): AsyncIterable<PlantRecord[]>;

  /**
   * A number that moves whenever a commit by another process may have changed the plants; null
   * when the engine cannot tell cheaply. This process's own commits do not move it: who commits
   * says which accounts it wrote (PlantService tells its page cache). Read before a read, it stamps
   * what that read saw: the result stays current, as far as other processes go, for as long as the
   * number stays the same.
   */
  plantsVersion(): number | null;

  createToken(token: NewToken): Promise<void>;
  findTokenByHash(secretHash: string): Promise<TokenRecord | null>;
  listTokens(account?: string): Promise<TokenRecord[]>;
  /** false when no token has this id. */
  revokeToken(id: string, at: Date): Promise<boolean>;
  /** Creates `token` only if the store has never held a token; true when it did. */
  createFirstToken(token: NewToken): Promise<boolean>;

  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
