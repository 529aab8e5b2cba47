import { HttpError } from '../errors.js';
import { PLANT_EVENT_TYPES, type PlantEventType } from '../events/plant-event.js';
import type { FieldRules, InputRules } from '../http/input-rules.js';
import {
  DELIVERIES_LIMIT,
  DeliveriesQuery,
  NewWebhookEndpoint,
  RecoverRequest,
  WebhookEndpointPatch,
  WebhookIdParams,
} from './schemas.js';

/**
 * What the /webhooks input schemas cannot say; their keywords are enforced from the schemas
 * themselves (http/schema-check.ts), and each rule here is said in words in its schema's
 * description. Whether a URL's addresses are allowed is asked later, of the address guard: it
 * needs the resolver and the --webhook-allow-private setting.
 */

function bad(message: string): never {
  throw new HttpError(400, message);
}

/** `format: uri` as the description says it: absolute, http(s), no credentials, nothing the URL parser would drop. */
function checkUrl(value: string): string {
  // A stored text must read back as it was sent: an unpaired surrogate would come back as U+FFFD.
  if (!value.isWellFormed()) bad('url must be valid Unicode (it has an unpaired surrogate)');
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

const EVENT_TYPES = PLANT_EVENT_TYPES.join(', ');

const endpointFields: Record<string, FieldRules> = {
  url: { check: checkUrl },
  events: {
    messages: {
      type: `events must be an array of event types (${EVENT_TYPES})`,
      minItems: 'events must name at least one event type',
    },
    // An event type named twice is sent once.
    check: (events: PlantEventType[]) => [...new Set(events)],
  },
  'events[]': {
    messages: { enum: (event) => `events: unknown event type ${JSON.stringify(event)}; known: ${EVENT_TYPES}` },
  },
};

const deliveriesLimit = `limit must be an integer from 1 to ${DELIVERIES_LIMIT.max}`;

function laterThanSince(window: RecoverRequest): RecoverRequest {
  if (window.until !== undefined && window.until <= window.since) bad('until must be later than since');
  return window;
}

export const WEBHOOK_INPUTS: readonly InputRules[] = [
  { schema: NewWebhookEndpoint, fields: endpointFields },
  { schema: WebhookEndpointPatch, fields: endpointFields },
  { schema: WebhookIdParams, fields: { id: { messages: { pattern: 'id must be a webhook endpoint id (ep_...)' } } } },
  { schema: DeliveriesQuery, fields: { limit: { messages: { once: deliveriesLimit } } } },
  { schema: RecoverRequest, fields: { '': { check: laterThanSince } } },
];
