import type Database from 'better-sqlite3';
import type { WebhookStorage } from '../types/webhooks.js';
import { sqliteDeliveries } from './webhook-deliveries.js';
import { sqliteEndpoints } from './webhook-endpoints.js';

/**
 * Times are epoch milliseconds; `events` is space-separated with a space at each end (see the
 * outbox). Endpoints are written through `db` (synced at each commit, as plants are), and so is
 * the deliverer's side of a `:memory:` store, whose deliverer runs on the event loop. A file's
 * deliverer claims and records from its thread, through a connection of its own that does not
 * sync each commit (storage/open-delivery-store.ts): a result lost in a power cut only means that event
 * is sent again (at least once), and no request waits for a sync made for the deliverer. Here, the
 * deliverer's side of a file store answers /metrics' backlog.
 */

export function sqliteWebhooks(db: Database.Database): WebhookStorage {
  return { ...sqliteEndpoints(db), ...sqliteDeliveries(db) };
}
