import type { PlantEventType } from '../../events/plant-event.js';

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

/**
 * How a claim shares the deliverer's slots among accounts and endpoints (see `claimDeliveries`; the
 * rules are in src/webhooks/fair-share.ts): how many more deliveries of one account, and of one
 * endpoint, the claim may take. An account or endpoint not listed has `perAccount` or `perEndpoint`
 * of room; one listed with no room left is not even read.
 */
export interface ClaimShare {
  perAccount: number;
  perEndpoint: number;
  accounts: Array<{ account: string; room: number }>;
  endpoints: Array<{ account: string; endpointId: string; room: number }>;
  /** How many due rows the claim may read to find its deliveries. */
  window: number;
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

/**
 * A leased delivery's key, and where the store finds its row again without searching: on
 * PostgreSQL the row's physical place (ctid) when it was claimed, so that writing a result needs no
 * index and so no table statistics (without them, the planner looked rows up through the
 * endpoint's index and read the whole endpoint's backlog for each); null on SQLite, whose key
 * lookup always takes the primary key. A row changed since the claim (disabled, leased elsewhere)
 * is not found there, as a lost lease is not.
 */
export interface LeasedKey extends DeliveryKey {
  row: string | null;
}

/** A delivery leased to one process for one attempt, with what that attempt needs. */
export interface ClaimedDelivery extends LeasedKey, EndpointSecrets {
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
   * No more of one account or one endpoint than `share` leaves room for: one account's backlog, or
   * its receivers that hang, cannot take every slot from the others.
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
  recordAttempts(owner: string, results: Array<{ key: LeasedKey; record: AttemptRecord }>): Promise<void>;
  /** A receiver said 410 Gone: the endpoint is disabled and its pending deliveries fail with `reason`. */
  disableEndpoint(account: string, endpointId: string, reason: string): Promise<void>;
  /** Removes delivered and failed deliveries last changed before `before`; how many. */
  pruneDeliveries(before: Date): Promise<number>;
  /** Pending deliveries and the creation time of the oldest, for /metrics. */
  deliveryBacklog(): Promise<{ pending: number; oldestCreatedAt: Date | null }>;
}

/** The deliverer's side of the store (src/webhooks/deliverer.ts), which it may reach from a thread of its own. */
export type DeliveryStorage = Pick<
  WebhookStorage,
  'claimDeliveries' | 'recordAttempts' | 'disableEndpoint' | 'pruneDeliveries' | 'deliveryBacklog'
>;

/**
 * How another thread opens the deliverer's side of a store (storage/open-delivery-store.ts): plain
 * data, as it crosses to the thread. `pooled`: the URL leads to a transaction-pooling PgBouncer.
 */
export type DeliverySource =
  { engine: 'sqlite'; path: string } | { engine: 'postgres'; url: string; pooled: boolean; timeoutMs: number };
