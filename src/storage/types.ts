import type { FeedStorage } from './types/feed.js';
import type { PlantStorage } from './types/plants.js';
import type { TokenStorage } from './types/tokens.js';
import type { DeliverySource, WebhookStorage } from './types/webhooks.js';

/**
 * The one small interface both engines implement, its parts by concern: plants
 * (types/plants.ts), API tokens (types/tokens.ts), webhook endpoints and deliveries (types/webhooks.ts),
 * the change feed's events (types/feed.ts).
 */
export interface Storage extends PlantStorage, TokenStorage, WebhookStorage, FeedStorage {
  readonly engine: 'sqlite' | 'postgres';
  /** Where the webhook deliverer's thread reaches this store; null when no other thread can. */
  readonly deliverySource: DeliverySource | null;

  /** Throws when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * While the store waits for a database that did not answer at start (PostgreSQL): resolves once
   * it answers and its schema is up to date, rejects on an error no retry can mend. Null once ready.
   */
  untilReady?(): Promise<void> | null;
  /**
   * The longest a request waits on this store, all its calls together (PostgreSQL's
   * `--database-timeout`; http/request-deadline.ts): absent, the store has no such bound (SQLite).
   */
  readonly timeoutMs?: number;
  /** Seconds since the database last answered, 0 while it answers (PostgreSQL). */
  unreachableSeconds?(): number;
  /**
   * Where the store tells of faults it meets and recovers from by itself (a full disk, a writer
   * thread restarted): storage stands below the log and the metrics, so the app hands them down.
   * Until then it tells no one.
   */
  reportTo?(report: StoreReport): void;
}

/** The dependencies `plant_store_dependency_errors_total` counts, one label value each. */
export type Dependency = 'postgres' | 'redis' | 'disk';

/** The log and the failure counter, as a store sees them (storeReport in telemetry/metrics.ts makes one). */
export interface StoreReport {
  log(level: 'error' | 'warn' | 'info', fields: Record<string, unknown>, message: string): void;
  /** One failed call to a dependency: `plant_store_dependency_errors_total{dependency}`. */
  dependencyFailed(dependency: Dependency): void;
}
