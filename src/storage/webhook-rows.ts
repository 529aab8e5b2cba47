import type { PlantEventType, WebhookDelivery } from './types.js';

/**
 * The rows of the webhook tables as both engines read them; `Time` is how each hands back a time:
 * a `Date` from PostgreSQL's timestamptz, epoch milliseconds from SQLite.
 */

export interface DeliveryRow<Time> {
  event_id: string;
  event_type: PlantEventType;
  state: WebhookDelivery['state'];
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: Time | null;
  created_at: Time;
}

export interface ClaimRow<Time> {
  account: string;
  endpoint_id: string;
  event_id: string;
  event_type: PlantEventType;
  payload: string;
  attempts: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Time | null;
}
