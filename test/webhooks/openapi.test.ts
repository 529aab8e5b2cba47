import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { sqlite } from '../helpers/engines.js';
import { call } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';
import { createWebhook } from '../helpers/webhooks.js';

interface Operation {
  operationId?: string;
  tags?: string[];
  responses: Record<string, { $ref?: string; content?: Record<string, { schema: { $ref?: string } }> }>;
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
  parameters?: Array<{ name: string; in: string }>;
}

type Document = {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
  'x-webhooks': Record<string, { post: Operation }>;
};

describe('the served document describes the webhooks', () => {
  const s = realServer(sqlite);

  describe('the /webhooks operations, with operationIds, the webhooks tag and every status', () => {
    it('lists each operation', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as Document;
      const expected: Array<[string, string, string, string[]]> = [
        ['/webhooks', 'post', 'createWebhook', ['201', '400', '401', '403', '409', '413', '415', '429']],
        ['/webhooks', 'get', 'listWebhooks', ['200', '401', '403', '429']],
        ['/webhooks/{id}', 'get', 'getWebhook', ['200', '400', '401', '403', '404']],
        ['/webhooks/{id}', 'patch', 'updateWebhook', ['200', '400', '401', '403', '404', '415']],
        ['/webhooks/{id}', 'delete', 'deleteWebhook', ['204', '400', '401', '403', '404']],
        ['/webhooks/{id}/rotate-secret', 'post', 'rotateWebhookSecret', ['200', '401', '403', '404']],
        ['/webhooks/{id}/deliveries', 'get', 'listWebhookDeliveries', ['200', '400', '401', '403', '404']],
        ['/webhooks/{id}/recover', 'post', 'recoverWebhookDeliveries', ['202', '400', '401', '403', '404', '409']],
      ];
      for (const [path, method, operationId, statuses] of expected) {
        const operation = document.paths[path]?.[method];
        assert.ok(operation, `${method} ${path}`);
        assert.equal(operation.operationId, operationId);
        assert.deepEqual(operation.tags, ['webhooks']);
        for (const status of [...statuses, '500', '503', 'default'])
          assert.ok(operation.responses[status], `${operationId} ${status}`);
      }
      for (const shape of ['WebhookEndpoint', 'WebhookEndpointWithSecret', 'WebhookDelivery', 'NewWebhookEndpoint']) {
        assert.ok(document.components.schemas[shape], shape);
      }
    });
  });

  describe('declares what the server accepts: the {id} pattern, the url format, the recover window', () => {
    type Schema = { pattern?: string; format?: string; maxLength?: number; description?: string };
    const schemas = async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as Document;
      return {
        document,
        schemas: document.components.schemas as Record<string, { properties: Record<string, Schema> }>,
      };
    };

    it('gives every webhook {id} the pattern of endpoint ids: matching ids are looked up, others are a 400', async () => {
      const { document } = await schemas();
      const patterns = new Set<string>();
      for (const [path, operations] of Object.entries(document.paths).filter(([path]) =>
        path.includes('/webhooks/{id}'),
      ))
        for (const [method, operation] of Object.entries(operations)) {
          const id = (operation.parameters as Array<{ name: string; in: string; schema: Schema }>).find(
            (p) => p.in === 'path' && p.name === 'id',
          );
          assert.ok(id?.schema.pattern, `${method} ${path}`);
          patterns.add(id.schema.pattern);
        }
      assert.equal(patterns.size, 1);
      const pattern = new RegExp([...patterns][0]!);
      const created = await createWebhook(s.url, s.token, { url: 'https://93.184.215.14/hook' });
      const realId = (created.json as { id: string }).id;
      assert.match(realId, pattern);
      for (const id of ['0', 'ep_', 'ep_has space', `ep_${'a'.repeat(65)}`]) {
        assert.doesNotMatch(id, pattern);
        const reply = await call(`${s.url}/webhooks/${encodeURIComponent(id)}`, { token: s.token });
        assert.equal(reply.status, 400, id);
        assert.match((reply.json as { message: string }).message, /^id /);
      }
      for (const id of ['ep_unknown', `ep_${'a'.repeat(64)}`]) {
        assert.match(id, pattern);
        assert.equal((await call(`${s.url}/webhooks/${id}`, { token: s.token })).status, 404, id);
      }
    });

    it('declares url as format uri, at most 2048 characters, https unless --webhook-allow-private', async () => {
      const { schemas: all } = await schemas();
      for (const shape of ['NewWebhookEndpoint', 'WebhookEndpointPatch', 'WebhookEndpoint']) {
        const url = all[shape]!.properties.url!;
        assert.equal(url.format, 'uri', shape);
        assert.equal(url.maxLength, 2048, shape);
        assert.match(url.description!, /absolute https URL.*--webhook-allow-private/, shape);
      }
      const relative = await createWebhook(s.url, s.token, { url: '/hooks/plants' });
      assert.equal(relative.status, 400);
      assert.match((relative.json as { message: string }).message, /^url /);
    });

    it('states that until must be later than since, as the server holds it', async () => {
      const { document, schemas: all } = await schemas();
      assert.match(all.RecoverRequest!.properties.until!.description!, /later than since/);
      const operation = document.paths['/webhooks/{id}/recover']!.post! as Operation & { description: string };
      assert.match(operation.description, /until, when given, must be later than since/);
      const endpoint = (await createWebhook(s.url, s.token, { url: 'https://93.184.215.14/hook' })).json as {
        id: string;
      };
      for (const until of ['2026-11-23T08:00:00Z', '2026-11-23T07:00:00Z']) {
        const reply = await call(`${s.url}/webhooks/${endpoint.id}/recover`, {
          method: 'POST',
          token: s.token,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ since: '2026-11-23T08:00:00Z', until }),
        });
        assert.equal(reply.status, 400, until);
        assert.match((reply.json as { message: string }).message, /^until /);
      }
    });
  });

  describe("the events under x-webhooks, as the 3.1 sample's webhooks", () => {
    it('has newPlant (plant.created), plantUpdated and plantDeleted: a POST of NewPlant answered 200', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as Document;
      assert.deepEqual(Object.keys(document['x-webhooks']).sort(), ['newPlant', 'plantDeleted', 'plantUpdated']);
      for (const event of Object.values(document['x-webhooks'])) {
        assert.equal(event.post.requestBody!.content['application/json']!.schema.$ref, '#/components/schemas/NewPlant');
        assert.ok(event.post.responses['200']);
        assert.deepEqual(
          event.post.parameters!.map((p) => p.name),
          ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'Plant-Store-Event'],
        );
      }
      assert.ok(document.components.schemas.NewPlant);
    });
    it('is still a valid OpenAPI 3.0 document', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json;
      const result = await new Validator().validate(document as Parameters<Validator['validate']>[0]);
      assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
    });
  });
});
