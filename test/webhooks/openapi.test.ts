import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { sqlite } from '../helpers/engines.js';
import { call } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';

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
