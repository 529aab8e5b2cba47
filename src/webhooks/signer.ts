import { createHmac, randomBytes } from 'node:crypto';
import type { ClaimedDelivery, EndpointSecrets } from '../storage/types/webhooks.js';

/**
 * Standard Webhooks (standardwebhooks.com) signatures, which the `standardwebhooks` and Svix
 * libraries of every language verify: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * with the bytes the secret's base64 part decodes to.
 */

const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 random bytes (the standard asks for 24 to 64). */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function sign(secret: string, content: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return 'v1,' + createHmac('sha256', key).update(content).digest('base64');
}

/** The secrets that sign at `now`: the current one, and the one it replaced while its overlap lasts. */
export function signingSecrets(secrets: EndpointSecrets, now: Date): string[] {
  const { secret, previousSecret, previousSecretUntil } = secrets;
  const overlapping = previousSecret !== null && previousSecretUntil !== null && previousSecretUntil > now;
  return overlapping ? [secret, previousSecret] : [secret];
}

/** The `webhook-signature` header: one signature per secret, space-separated. */
export function signatureHeader(secrets: string[], id: string, timestamp: number, body: string): string {
  const content = `${id}.${timestamp}.${body}`;
  return secrets.map((secret) => sign(secret, content)).join(' ');
}

/** The headers of one attempt of `delivery` made at `now`: its event, its id and this attempt's signature. */
export function signedHeaders(delivery: ClaimedDelivery, now: Date): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'plant-store-webhooks',
    'plant-store-event': delivery.eventType,
    'webhook-id': delivery.eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(signingSecrets(delivery, now), delivery.eventId, timestamp, delivery.payload),
  };
}
