import { Type, type Static } from '@sinclair/typebox';
import { LIMITS } from '../limits.js';
import { wholeValue } from '../patterns.js';
import { Text } from '../text.js';
import { PLANT_EVENT_TYPES, type PlantEventType } from '../events/plant-event.js';
import type { DeliveryState } from '../storage/types/webhooks.js';
import { MAX_URL_LENGTH } from './address-guard.js';

/**
 * The shapes of the /webhooks API, each with an `$id` (so an OpenAPI component). An input's
 * keywords are its checks (http/schema-check.ts); validate.ts adds only what they cannot say.
 */

export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'delivered', 'failed'];
export const DELIVERIES_LIMIT = { default: 100, max: 1000 } as const;

/** What an endpoint id looks like (`ep_` and base64url), declared so that clients and testers can tell. */
const ENDPOINT_ID_PATTERN = wholeValue('ep_[A-Za-z0-9_-]{1,64}');
const EndpointId = Type.String({ pattern: ENDPOINT_ID_PATTERN, description: 'The endpoint id (ep_...)' });

const EventType = Type.Unsafe<PlantEventType>({ type: 'string', enum: [...PLANT_EVENT_TYPES] });
const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
const Url = Type.String({
  format: 'uri',
  maxLength: MAX_URL_LENGTH,
  description:
    'Where events are POSTed: an absolute https URL (http too only while the server runs with ' +
    '--webhook-allow-private, for development), at most 2048 characters, no credentials, no spaces or control characters, ' +
    'a host that resolves only to public addresses (loopback, private, link-local, CGNAT, unspecified and multicast addresses are refused)',
});
const Events = Type.Array(EventType, {
  minItems: 1,
  description: 'The event types sent to this endpoint; plant.created (the sample\'s "newPlant") by default',
});
const Description = Text({
  maxLength: LIMITS.textLength,
  description: 'A note for people, stored as sent: no U+0000, no unpaired surrogate; empty by default',
});

const endpointFields = {
  id: EndpointId,
  url: Url,
  events: Events,
  description: Description,
  enabled: Type.Boolean({
    description: 'false when registered or patched with {"enabled": false}, or after a 410 from the receiver',
  }),
  createdAt: Timestamp('When the endpoint was registered'),
};

const ENDPOINT_EXAMPLE = {
  id: 'ep_3kTMd9Qx2wR7',
  url: 'https://shop.example.com/hooks/plants',
  events: ['plant.created'],
  description: 'catalogue sync',
  enabled: true,
  createdAt: '2026-11-23T10:00:00.000Z',
};

export const WebhookEndpoint = Type.Object(endpointFields, { $id: 'WebhookEndpoint', examples: [ENDPOINT_EXAMPLE] });
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;
export const WebhookEndpoints = Type.Array(Type.Ref(WebhookEndpoint), { examples: [[ENDPOINT_EXAMPLE]] });

export const WebhookEndpointWithSecret = Type.Object(
  {
    ...endpointFields,
    secret: Type.String({
      description: 'The signing secret (whsec_ + base64 of 32 random bytes), shown only in this response',
    }),
  },
  {
    $id: 'WebhookEndpointWithSecret',
    examples: [{ ...ENDPOINT_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/1fk3xw3wT0=' }],
  },
);
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

export const NewWebhookEndpoint = Type.Object(
  {
    url: Url,
    events: Type.Optional(Events),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({ description: 'false registers the endpoint without sending it events yet; true by default' }),
    ),
  },
  {
    $id: 'NewWebhookEndpoint',
    additionalProperties: true,
    description: 'Other properties are ignored.',
    examples: [
      { url: 'https://shop.example.com/hooks/plants', events: ['plant.created'], description: 'catalogue sync' },
    ],
  },
);
export type NewWebhookEndpoint = Static<typeof NewWebhookEndpoint>;

export const WebhookEndpointPatch = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({ description: 'false stops deliveries (pending ones fail; see recover); true resumes them' }),
    ),
  },
  {
    $id: 'WebhookEndpointPatch',
    additionalProperties: true,
    description: 'Absent fields stay as they are.',
    examples: [{ enabled: true }, { events: ['plant.created', 'plant.deleted'] }],
  },
);
export type WebhookEndpointPatch = Static<typeof WebhookEndpointPatch>;

export const WebhookIdParams = Type.Object({ id: EndpointId }, { $id: 'WebhookIdParams' });
export type WebhookIdParams = Static<typeof WebhookIdParams>;

export const DeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: DELIVERIES_LIMIT.max,
        default: DELIVERIES_LIMIT.default,
        description: 'How many deliveries, newest first',
      }),
    ),
  },
  { $id: 'DeliveriesQuery' },
);
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

export const WebhookDelivery = Type.Object(
  {
    eventId: Type.String({ description: 'The event id: the webhook-id header, the same on every attempt' }),
    eventType: EventType,
    state: Type.Unsafe<DeliveryState>({ type: 'string', enum: [...DELIVERY_STATES] }),
    attempts: Type.Integer({ description: 'Attempts made so far' }),
    lastStatus: Type.Unsafe<number | null>({
      type: 'integer',
      nullable: true,
      description: "The last attempt's HTTP status, null when it had none",
    }),
    lastError: Type.Unsafe<string | null>({
      type: 'string',
      nullable: true,
      description: 'Why the last attempt got no answer (timeout, refused address, ...), or null',
    }),
    nextAttemptAt: Type.Unsafe<string | null>({
      type: 'string',
      format: 'date-time',
      nullable: true,
      description: 'When the next attempt is due; null once delivered or failed',
    }),
    createdAt: Timestamp('When the event happened'),
  },
  {
    $id: 'WebhookDelivery',
    examples: [
      {
        eventId: 'msg_miakb0s8_5rMmlhDBkyFhKyKq',
        eventType: 'plant.created',
        state: 'pending',
        attempts: 1,
        lastStatus: 503,
        lastError: null,
        nextAttemptAt: '2026-11-23T10:05:00.000Z',
        createdAt: '2026-11-23T10:00:00.000Z',
      },
    ],
  },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;
export const WebhookDeliveries = Type.Array(Type.Ref(WebhookDelivery), { examples: [WebhookDelivery.examples] });

/** A date-time input: its check (http/schema-check.ts) hands it on as a Date. */
const TimestampInput = (description: string) => Type.Unsafe<Date>({ format: 'date-time', description, type: 'string' });

export const RecoverRequest = Type.Object(
  {
    since: TimestampInput('Start of the window (RFC 3339), inclusive'),
    until: Type.Optional(
      TimestampInput('End of the window (RFC 3339), exclusive; now when absent. Must be later than since, else 400'),
    ),
  },
  { $id: 'RecoverRequest', additionalProperties: true, examples: [{ since: '2026-11-23T08:00:00Z' }] },
);
export type RecoverRequest = Static<typeof RecoverRequest>;

export const RecoverResult = Type.Object(
  { queued: Type.Integer({ description: 'Failed events queued again, each with its original webhook-id' }) },
  { $id: 'RecoverResult', examples: [{ queued: 12 }] },
);

export const webhookSchemas = [
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  NewWebhookEndpoint,
  WebhookEndpointPatch,
  WebhookDelivery,
  RecoverRequest,
  RecoverResult,
];
