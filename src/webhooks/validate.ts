import { HttpError } from '../errors.js';
import { LIMITS } from '../limits.js';
import { PLANT_EVENT_TYPES, type PlantEventType } from '../events/plant-event.js';
import { MAX_URL_LENGTH } from './address-guard.js';
import type { ExactValidator } from '../http/exact-validator.js';
import {
  DELIVERIES_LIMIT,
  ENDPOINT_ID_PATTERN,
  DeliveriesQuery,
  NewWebhookEndpoint,
  RecoverRequest,
  WebhookEndpointPatch,
  WebhookIdParams,
} from './schemas.js';

/**
 * The exact checks behind the /webhooks input schemas (see plants/validate.ts for why not Ajv).
 * Each 400 names its field. Whether a URL's addresses are allowed is asked later, of the
 * address guard: it needs the resolver and the --webhook-allow-private setting.
 */

function bad(message: string): never {
  throw new HttpError(400, message);
}

function jsonObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) bad('request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** A stored text must read back as it was sent: an unpaired surrogate would come back as U+FFFD. */
function checkWellFormed(field: string, value: string): void {
  if (!value.isWellFormed()) bad(`${field} must be valid Unicode (it has an unpaired surrogate)`);
}

function checkUrl(value: unknown): string {
  if (typeof value !== 'string') bad('url must be a string');
  if (value.length > MAX_URL_LENGTH) bad(`url must be at most ${MAX_URL_LENGTH} characters`);
  checkWellFormed('url', value);
  // The URL parser would drop them silently, and the endpoint would show a URL it never calls.
  if (/[\u0000-\u0020\u007f]/.test(value)) bad('url must not contain spaces or control characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    bad('url must be an absolute URL (https://...)');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') bad('url must be an https URL');
  if (url.username !== '' || url.password !== '') bad('url must not contain credentials (user:password@)');
  return value;
}

function checkEvents(value: unknown): PlantEventType[] {
  if (!Array.isArray(value)) bad(`events must be an array of event types (${PLANT_EVENT_TYPES.join(', ')})`);
  if (value.length === 0) bad('events must name at least one event type');
  for (const event of value) {
    if (!PLANT_EVENT_TYPES.includes(event as PlantEventType)) {
      bad(`events: unknown event type ${JSON.stringify(event)}; known: ${PLANT_EVENT_TYPES.join(', ')}`);
    }
  }
  return [...new Set(value as PlantEventType[])];
}

function checkEnabled(value: unknown): boolean {
  if (typeof value !== 'boolean') bad('enabled must be true or false');
  return value;
}

function checkDescription(value: unknown): string {
  if (typeof value !== 'string') bad('description must be a string');
  if ([...value].length > LIMITS.textLength) bad(`description must be at most ${LIMITS.textLength} characters`);
  if (value.includes('\u0000')) bad('description must not contain U+0000');
  checkWellFormed('description', value);
  return value;
}

export function validateNewWebhookEndpoint(body: unknown): NewWebhookEndpoint {
  const fields = jsonObject(body);
  if (fields.url === undefined) bad('url is required');
  const endpoint: NewWebhookEndpoint = { url: checkUrl(fields.url) };
  if (fields.events !== undefined) endpoint.events = checkEvents(fields.events);
  if (fields.description !== undefined) endpoint.description = checkDescription(fields.description);
  if (fields.enabled !== undefined) endpoint.enabled = checkEnabled(fields.enabled);
  return endpoint;
}

export function validateWebhookEndpointPatch(body: unknown): WebhookEndpointPatch {
  const fields = jsonObject(body);
  const patch: WebhookEndpointPatch = {};
  if (fields.url !== undefined) patch.url = checkUrl(fields.url);
  if (fields.events !== undefined) patch.events = checkEvents(fields.events);
  if (fields.description !== undefined) patch.description = checkDescription(fields.description);
  if (fields.enabled !== undefined) {
    patch.enabled = checkEnabled(fields.enabled);
  }
  return patch;
}

const ENDPOINT_ID = new RegExp(ENDPOINT_ID_PATTERN);

export function validateWebhookIdParams(params: unknown): WebhookIdParams {
  const id = (params as { id?: unknown } | null)?.id;
  if (typeof id !== 'string' || !ENDPOINT_ID.test(id)) bad('id must be a webhook endpoint id (ep_...)');
  return { id };
}

export function validateDeliveriesQuery(query: unknown): DeliveriesQuery {
  const limit = (query as { limit?: unknown } | null)?.limit;
  if (limit === undefined) return { limit: DELIVERIES_LIMIT.default };
  if (typeof limit !== 'string' || !/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > DELIVERIES_LIMIT.max) {
    bad(`limit must be an integer from 1 to ${DELIVERIES_LIMIT.max}`);
  }
  return { limit: Number(limit) };
}

/** RFC 3339 date-time: a full date, a time with seconds, an optional fraction, and Z or an offset. */
const RFC_3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function checkTime(field: string, value: unknown): Date {
  const time = typeof value === 'string' && RFC_3339.test(value) ? new Date(value) : null;
  if (time === null || Number.isNaN(time.getTime()))
    bad(`${field} must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z`);
  return time;
}

export function validateRecoverRequest(body: unknown): RecoverRequest {
  const fields = jsonObject(body);
  if (fields.since === undefined) bad('since is required');
  const since = checkTime('since', fields.since);
  if (fields.until === undefined) return { since };
  const until = checkTime('until', fields.until);
  if (until <= since) bad('until must be later than since');
  return { since, until };
}

/** Each input schema with the exact check behind it, for the one validator compiler (contract/validation.ts). */
export const WEBHOOK_VALIDATORS: readonly ExactValidator[] = [
  { schema: NewWebhookEndpoint, validate: validateNewWebhookEndpoint },
  { schema: WebhookEndpointPatch, validate: validateWebhookEndpointPatch },
  { schema: WebhookIdParams, validate: validateWebhookIdParams },
  { schema: DeliveriesQuery, validate: validateDeliveriesQuery },
  { schema: RecoverRequest, validate: validateRecoverRequest },
];
