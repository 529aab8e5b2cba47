import type Database from 'better-sqlite3';
import type { PlantEventType } from '../../events/plant-event.js';
import type { WebhookEndpoint } from '../types/webhooks.js';

/** What both halves of the SQLite webhook storage share: rows, times, and the statement that fails pending deliveries. */

export const msDate = (ms: number) => new Date(ms);

export interface EndpointRow {
  id: string;
  url: string;
  events: string;
  description: string;
  enabled: number;
  created_at: number;
}

export const eventsText = (events: PlantEventType[]) => ` ${events.join(' ')} `;

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: row.events.split(' ').filter(Boolean) as PlantEventType[],
    description: row.description,
    enabled: row.enabled === 1,
    createdAt: new Date(row.created_at),
  };
}

/** Fails the pending deliveries of an endpoint (disabled, or gone), on either connection. */
export const failPending = (conn: Database.Database) =>
  conn.prepare(
    `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, last_error = @reason,
       lease_owner = NULL, lease_until = NULL, updated_at = @now
     WHERE account = @account AND endpoint_id = @endpointId AND state = 'pending'`,
  );
