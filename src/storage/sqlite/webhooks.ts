import type Database from 'better-sqlite3';
import type { WebhookStorage } from '../types/webhooks.js';
import { sqliteDeliveries } from './webhook-deliveries.js';
import { sqliteEndpoints } from './webhook-endpoints.js';

/**
 * Times are epoch milliseconds; `events` is space-separated with a space at each end (see the
 * outbox). Endpoints are written through `db` (synced at each commit, as plants are); the
 * deliverer's claims and results through `deliveries`, a second connection that does not sync
 * each commit: a result lost in a power cut only means that event is sent again (at least once),
 * and the request path never waits for a sync made for the deliverer.
 */

export function sqliteWebhooks(db: Database.Database, deliveries: Database.Database): WebhookStorage {
  return { ...sqliteEndpoints(db), ...sqliteDeliveries(deliveries) };
}
