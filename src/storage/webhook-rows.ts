import type { PlantEventType } from '../events/plant-event.js';
import type { RowValues } from './row-values.js';
import type { ClaimedDelivery, WebhookDelivery, WebhookEndpoint } from './types/webhooks.js';

/**
 * The rows of the webhook tables as both engines read them; `Time`, `Words` and `Flag` are how each
 * hands back a time, a list of words and a flag (row-values.ts).
 */

export interface EndpointRow<Time, Words, Flag> {
  id: string;
  url: string;
  events: Words;
  description: string;
  enabled: Flag;
  created_at: Time;
}

/** One endpoint as a map key: its account and id, neither able to pass for part of the other. */
export function endpointKey(account: string, endpointId: string): string {
  return JSON.stringify([account, endpointId]);
}

/** What reading an endpoint reads (never its secrets). */
export const ENDPOINT_COLUMNS = ['id', 'url', 'events', 'description', 'enabled', 'created_at'] as const;

export function toEndpoint<Time, Words, Flag>(
  row: EndpointRow<Time, Words, Flag>,
  values: RowValues<Time, Words, Flag>,
): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: values.words(row.events) as PlantEventType[],
    description: row.description,
    enabled: values.flag(row.enabled),
    createdAt: values.date(row.created_at),
  };
}

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
  /** PostgreSQL's ctid at the claim (LeasedKey), as text; SQLite has none. */
  row?: string;
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

/** How an engine turns its time into a `Date`. */
export type ToDate<Time> = (time: Time) => Date;

export function toDelivery<Time>(row: DeliveryRow<Time>, toDate: ToDate<Time>): WebhookDelivery {
  return {
    eventId: row.event_id,
    eventType: row.event_type,
    state: row.state,
    attempts: row.attempts,
    lastStatus: row.last_status,
    lastError: row.last_error,
    nextAttemptAt: row.next_attempt_at === null ? null : toDate(row.next_attempt_at),
    createdAt: toDate(row.created_at),
  };
}

export function toClaimed<Time>(row: ClaimRow<Time>, toDate: ToDate<Time>): ClaimedDelivery {
  return {
    account: row.account,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    row: row.row ?? null,
    eventType: row.event_type,
    payload: row.payload,
    attempts: row.attempts,
    url: row.url,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretUntil: row.previous_secret_until === null ? null : toDate(row.previous_secret_until),
  };
}
