import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';

const STATUS_MEANINGS: Record<number, string> = {
  400:
    'Bad request: malformed JSON, a body that is not an object, a missing or wrongly typed field (no coercion), ' +
    'id outside int64, name empty or over 256 characters, tag over 256 characters, U+0000 in name or tag, a bad limit or cursor. ' +
    'The message names the offending field.',
  401: 'Missing, malformed, unknown, revoked or expired token, or a JWT that fails verification. WWW-Authenticate: Bearer realm="plant-store".',
  403: 'The token lacks the scope this operation needs (plants:read or plants:write); WWW-Authenticate carries error="insufficient_scope".',
  404: "No such path, or no plant with this id in the caller's account.",
  405: 'The path exists but not with this method; the Allow header lists the methods it has.',
  408: 'The request (headers within 10 s, the whole request within 30 s) did not arrive in time.',
  409: 'The account already has a plant with this id and a different name or tag.',
  412: "If-Match does not match the plant's current ETag: nothing was changed.",
  413: 'The body is larger than 16 KiB.',
  417: 'An Expect header other than 100-continue.',
  415: 'Content-Type is missing or is not application/json (any charset) or application/*+json.',
  431: 'Request headers larger than 16 KiB.',
  429: 'Too many requests for this account; Retry-After says when to try again.',
  500: 'Unexpected server error; the message carries no internals.',
  503: 'Temporarily unavailable (stopping, or the identity provider cannot be reached); Retry-After says when to retry.',
};

const OTHER_ERRORS =
  'Any other error, with the same Error body: 404 (no such path), 405 (method not allowed; see Allow), ' +
  '408 (request too slow), 417 (unsupported Expect), 431 (headers too large).';

/** Response entries for the given statuses, all with the `Error` body, and `default` for the rest. */
export function errorResponses(...statuses: number[]): Record<string, object> {
  return {
    ...Object.fromEntries(statuses.map((s) => [s, { description: STATUS_MEANINGS[s], $ref: 'Error#' }])),
    default: { description: OTHER_ERRORS, $ref: 'Error#' },
  };
}

const API_DESCRIPTION = `Plant Store keeps each account's plants. Every call needs \`Authorization: Bearer <token>\`:
an API token from \`plant-store token create\` or, when configured, a JWT from your identity provider.
A token reaches only its account's plants. Every non-2xx response is an \`Error\` object
\`{"error": <HTTP status>, "message": "..."}\` with \`Content-Type: application/json\`: an unknown path is a 404,
a known path with another method a 405 with an \`Allow\` header, and a request the HTTP parser rejects a 400.
\`/healthz\`, \`/readyz\`, \`/metrics\`, \`/openapi.json\`, \`/openapi.yaml\` and \`/docs\` need no token.`;

/** Every status the service can answer with, as reusable components of the document. */
const RESPONSE_COMPONENTS = Object.fromEntries(
  Object.entries(STATUS_MEANINGS).map(([status, description]) => [
    `Error${status}`,
    { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  ]),
);

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

function webhookEvent(type: string, description: string) {
  return {
    post: {
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

const X_WEBHOOKS = {
  newPlant: webhookEvent('plant.created', 'Information about a new plant added to the store'),
  plantUpdated: webhookEvent('plant.updated', 'A plant of the store changed: the plant as it is now'),
  plantDeleted: webhookEvent('plant.deleted', 'A plant was deleted from the store: the plant as it was'),
};

async function openApiPlugin(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.1',
      info: {
        title: 'OpenAPI Plant Store',
        version: '1.0.0',
        description: API_DESCRIPTION,
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
      },
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'API token or JWT' } },
        responses: RESPONSE_COMPONENTS,
      },
      security: [{ bearerAuth: [] }],
      // Spread in: the plugin's option types know no extensions, though it copies x- keys into the document.
      ...{ 'x-webhooks': X_WEBHOOKS },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // As everywhere else: the page is often opened over plain HTTP, where this would break it.
    transformStaticCSP: (csp) => csp.replace(/\s*upgrade-insecure-requests;?/, ''),
    uiConfig: { deepLinking: false },
  });

  const unsecured = { hide: true, security: [] };
  app.get('/openapi.json', { schema: unsecured }, async () => app.swagger());
  app.get('/openapi.yaml', { schema: unsecured }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );
}

export const openApi = fp(openApiPlugin, { name: 'openapi' });
