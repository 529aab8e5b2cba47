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
