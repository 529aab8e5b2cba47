import type { WebhookStorage } from '../types/webhooks.js';
import type { Sql } from './connection.js';
import { postgresDeliveries } from './webhook-deliveries.js';
import { postgresEndpoints } from './webhook-endpoints.js';

/**
 * Endpoints and deliveries. Every statement of the API names the account; the deliverer's claim
 * is the one that spans accounts (it looks for whatever is due), as a queue's consumer must.
 */

export function postgresWebhooks(sql: Sql): WebhookStorage {
  return { ...postgresEndpoints(sql), ...postgresDeliveries(sql) };
}
