import swagger from '@fastify/swagger';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { sharedSchemas } from '../schemas.js';
import { docsPage } from './docs-page.js';
import type { Tag } from '../http/route-docs.js';
import { type Media, type Response, sharedError } from './error-responses.js';
import { webhookSchemas } from '../webhooks/schemas.js';

const API_DESCRIPTION = `Plant Store keeps each account's plants. Every call needs \`Authorization: Bearer <token>\`:
an API token from \`npm run cli -- token create --account NAME\` (\`npx plant-store token create\` once installed) or, when configured, a JWT from your identity provider.
A token reaches only its account's plants. Every non-2xx response is an \`Error\` object
\`{"error": <HTTP status>, "message": "..."}\` with \`Content-Type: application/json\`: an unknown path is a 404,
a known path with another method a 405 with an \`Allow\` header, and a request the HTTP parser rejects a 400.
\`/healthz\`, \`/readyz\`, \`/metrics\`, \`/openapi.json\`, \`/openapi.yaml\` and \`/docs\` need no token.`;

/** What each tag groups, in the order the docs page lists them. */
const TAG_DESCRIPTIONS: Record<Tag, string> = {
  plants: "The caller's account's plants: add and list them, and read, change or delete one by id.",
  webhooks:
    "The account's webhook endpoints, which receive signed plant.created, plant.updated and plant.deleted events.",
  operations: 'Liveness, readiness and Prometheus metrics, for operators and load balancers; no token needed.',
};

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

const X_WEBHOOKS = {
  newPlant: webhookEvent('newPlant', 'plant.created', 'Information about a new plant added to the store'),
  plantUpdated: webhookEvent('plantUpdated', 'plant.updated', 'A plant of the store changed: the plant as it is now'),
  plantDeleted: webhookEvent(
    'plantDeleted',
    'plant.deleted',
    'A plant was deleted from the store: the plant as it was',
  ),
};

/** The parts of the OpenAPI document that the finishing steps below read or write. */
interface Operation {
  operationId?: string;
  tags?: string[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { example?: unknown }>; responses?: Record<string, Response> };
  tags?: Array<{ name: string; description: string }>;
}

const SCHEMAS = '#/components/schemas/';
const SHARED = new Set([...sharedSchemas, ...webhookSchemas].map((schema) => schema.$id));

/** After a create, the plant's own operations take the id the request sent (for stateful testers). */
const CREATED_PLANT_LINKS = ['getPlant', 'updatePlant', 'deletePlant'];

/** A route's body that is a shared schema is documented as a `$ref` to its component, not a copy. */
function refBodies({ schema, url }: { schema: FastifySchema; url: string }) {
  const $id = (schema?.body as { $id?: string } | undefined)?.$id;
  return { schema: $id !== undefined && SHARED.has($id) ? { ...schema, body: { $ref: `${$id}#` } } : schema, url };
}

/**
 * Every `Error` response becomes a `$ref` to the shared response of its status (made only for the
 * statuses some operation lists, so none is unused), and every body that `$ref`s a component
 * schema shows that schema's example.
 */
function finishOperation(operation: Operation, responses: Record<string, Response>, document: Document) {
  for (const [status, response] of Object.entries(operation.responses)) {
    const shared = response.content?.['application/json']?.schema?.$ref === `${SCHEMAS}Error` && sharedError(status);
    if (shared) {
      const [name, component] = shared;
      responses[name] = component;
      operation.responses[status] = { $ref: `#/components/responses/${name}` };
    }
  }
  const media = [operation.requestBody, ...Object.values(operation.responses)].flatMap((body) =>
    Object.values(body?.content ?? {}),
  );
  for (const entry of media) {
    const $ref = entry.schema?.$ref;
    if ($ref?.startsWith(SCHEMAS) && entry.example === undefined) {
      entry.example = document.components.schemas[$ref.slice(SCHEMAS.length)]?.example;
    }
  }
}

function finishDocument(document: Document) {
  const operations = Object.values(document.paths).flatMap((path) => Object.values(path));
  const responses: Record<string, Response> = {};
  for (const operation of operations) finishOperation(operation, responses, document);
  document.components.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));

  const used = new Set(operations.flatMap((operation) => operation.tags ?? []));
  document.tags = Object.entries(TAG_DESCRIPTIONS)
    .filter(([name]) => used.has(name))
    .map(([name, description]) => ({ name, description }));

  const byId = new Map(operations.map((operation) => [operation.operationId, operation]));
  const created = byId.get('addPlant')?.responses['200'];
  const links = CREATED_PLANT_LINKS.filter((operationId) => byId.has(operationId)).map((operationId) => [
    operationId,
    { operationId, parameters: { id: '$request.body#/id' }, description: 'The plant just added, by the id sent' },
  ]);
  if (created && links.length > 0) created.links = Object.fromEntries(links);
}

async function openApiPlugin(app: FastifyInstance) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.1',
      info: {
        title: 'OpenAPI Plant Store',
        version: '1.0.0',
        description: API_DESCRIPTION,
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
        contact: { name: 'Plant Store' },
      },
      // Relative: the server that served this document, wherever it runs.
      servers: [{ url: '/', description: 'This server' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'API token or JWT' } },
      },
      security: [{ bearerAuth: [] }],
      // Spread in: the plugin's option types know no extensions, though it copies x- keys into the document.
      ...{ 'x-webhooks': X_WEBHOOKS },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    transform: refBodies,
    transformObject: (documentObject) => {
      const { openapiObject } = documentObject as Extract<typeof documentObject, { openapiObject: unknown }>;
      finishDocument(openapiObject as unknown as Document);
      return openapiObject;
    },
  });
  await app.register(docsPage);

  const unsecured = { hide: true, security: [] };
  app.get('/openapi.json', { schema: unsecured }, async () => app.swagger());
  app.get('/openapi.yaml', { schema: unsecured }, async (_request, reply) =>
    reply.type('application/yaml').send(app.swagger({ yaml: true })),
  );
}

export const openApi = fp(openApiPlugin, { name: 'openapi' });
