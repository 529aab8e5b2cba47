import { WebhookVerificationError } from './errors.js';
import { parseJson } from './json.js';
import { eventPlant } from './event-plant.js';
import type { EventPlant, WebhookEventType } from './types.js';

/** A verified delivery: the Standard Webhooks id and timestamp, the event type, and the plant. */
export interface WebhookEvent {
  /** `webhook-id`: the same on every retry of this event, so it is the deduplication key. */
  id: string;
  type: WebhookEventType;
  /** `webhook-timestamp`: when this attempt was signed. */
  timestamp: Date;
  /** The plant as `NewPlant` (for `plant.deleted`, as it was), its id exact. */
  plant: EventPlant;
}

/** Request headers as fetch (`Headers`) or node:http (`IncomingHttpHeaders`) hands them over. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, either way (default 300 s). */
  toleranceSeconds?: number;
  now?: Date;
}

const EVENT_TYPES: readonly string[] = ['plant.created', 'plant.updated', 'plant.deleted'];
const encoder = new TextEncoder();

/**
 * Checks a delivery as Standard Webhooks defines it and returns the event, or throws
 * `WebhookVerificationError`. `rawBody` must be the bytes as received (not re-serialized JSON).
 * `secret` is the endpoint's `whsec_...`; pass two while rotating. Uses WebCrypto, so it runs in
 * Node and browsers; `crypto.subtle.verify` compares in constant time.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string | string[],
  { toleranceSeconds = 300, now = new Date() }: VerifyOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError('missing webhook-id, -timestamp or -signature');
  if (!/^\d{1,15}$/.test(timestamp) || Math.abs(now.getTime() / 1000 - Number(timestamp)) > toleranceSeconds)
    throw new WebhookVerificationError('webhook-timestamp is outside the tolerance');
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody;
  const signed = concat(encoder.encode(`${id}.${timestamp}.`), body);
  if (!(await anySignatureMatches(signed, signatures, Array.isArray(secret) ? secret : [secret])))
    throw new WebhookVerificationError('no matching signature');

  const type = header(headers, 'plant-store-event');
  if (!type || !EVENT_TYPES.includes(type)) throw new WebhookVerificationError(`unknown event type ${type}`);
  return { id, type: type as WebhookEventType, timestamp: new Date(Number(timestamp) * 1000), plant: toPlant(body) };
}

async function anySignatureMatches(
  signed: Uint8Array<ArrayBuffer>,
  signatures: string,
  secrets: string[],
): Promise<boolean> {
  for (const secret of secrets) {
    const key = await crypto.subtle.importKey(
      'raw',
      base64(secret.replace(/^whsec_/, '')),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['verify'],
    );
    for (const entry of signatures.split(' ')) {
      const [version, value] = entry.split(',', 2);
      if (version !== 'v1' || !value) continue;
      let signature: Uint8Array<ArrayBuffer>;
      try {
        signature = base64(value);
      } catch {
        continue;
      }
      if (await crypto.subtle.verify('HMAC', key, signature, signed)) return true;
    }
  }
  return false;
}

function toPlant(body: Uint8Array): WebhookEvent['plant'] {
  let value: unknown;
  try {
    value = parseJson(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
  const plant = eventPlant(value);
  if (plant === undefined) throw new WebhookVerificationError('the body is not a plant');
  return plant;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  // Duck-typed: a framework's own Headers class fails `instanceof` the global one.
  if (typeof headers.get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}

function base64(text: string): Uint8Array<ArrayBuffer> {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
