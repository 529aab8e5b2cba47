/**
 * The events the store POSTs to registered endpoints, for the served document (`x-webhooks`).
 */

// Webhooks: the events the store POSTs to registered endpoints, described as the OpenAPI 3.1
// sample describes its `newPlant` webhook. OpenAPI 3.0.1 has no `webhooks` field, hence the
// `x-webhooks` extension holding the same objects.
const WEBHOOK_HEADERS = [
  ['webhook-id', "The event's id, the same on every attempt: deduplicate by it"],
  ['webhook-timestamp', 'Unix time (seconds) of this attempt'],
  [
    'webhook-signature',
    "Standard Webhooks: v1,<base64 HMAC-SHA256 of id.timestamp.body keyed with the secret's decoded bytes>; " +
      'two space-separated signatures for 24 h after a secret rotation',
  ],
  ['Plant-Store-Event', 'The event type'],
].map(([name, description]) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } }));

function webhookEvent(operationId: string, type: string, description: string) {
  return {
    post: {
      operationId,
      summary: type,
      description:
        `${description}. Signed per Standard Webhooks; retried on anything but a 2xx within the timeout ` +
        '(5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each +-20 %); delivered at least once.',
      parameters: WEBHOOK_HEADERS,
      requestBody: {
        description: 'The plant as NewPlant JSON (id exact over int64)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPlant' } } },
      },
      responses: {
        200: { description: 'Return a 200 status (any 2xx) to indicate that the data was received successfully' },
      },
    },
  };
}

export const X_WEBHOOKS = {
  newPlant: webhookEvent('newPlant', 'plant.created', 'Information about a new plant added to the store'),
  plantUpdated: webhookEvent('plantUpdated', 'plant.updated', 'A plant of the store changed: the plant as it is now'),
  plantDeleted: webhookEvent(
    'plantDeleted',
    'plant.deleted',
    'A plant was deleted from the store: the plant as it was',
  ),
};
