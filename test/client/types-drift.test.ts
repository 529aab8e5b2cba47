import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { schemaSource } from '../../client/scripts/schema-source.js';
import { sqlite } from '../helpers/engines.js';
import { realServer } from '../helpers/suite.js';

describe("the client's committed types match the served OpenAPI document", () => {
  const s = realServer(sqlite);

  it('client/src/schema.d.ts is what openapi-typescript makes of /openapi.json today', async () => {
    const document = (await (await fetch(`${s.url}/openapi.json`)).json()) as object;
    const committed = readFileSync(new URL('../../client/src/schema.d.ts', import.meta.url), 'utf8');
    assert.ok(
      committed === (await schemaSource(document)),
      'client/src/schema.d.ts is stale: run `npm run client:generate` and commit the result',
    );
  });
});
