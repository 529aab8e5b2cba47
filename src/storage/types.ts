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
}
