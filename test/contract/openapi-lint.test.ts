import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TAGS } from '../../src/http/route-docs.js';
import { sqlite } from '../helpers/engines.js';
import { call } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';

/** The served document as generators (openapi-typescript) and stateful testers (Schemathesis) read it. */

const REDOCLY = fileURLToPath(new URL('../../node_modules/@redocly/cli/bin/cli.js', import.meta.url));

interface Problem {
  ruleId: string;
  severity: string;
  message: string;
  location: Array<{ pointer: string }>;
}

/** Every problem Redocly's recommended rules find in `text` (JSON or YAML), errors and warnings alike. */
function redoclyProblems(text: string, extension: 'json' | 'yaml'): string[] {
  // In a directory of its own, so that no redocly.yaml or ignore file of the project can relax a rule.
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-lint-'));
  try {
    writeFileSync(join(dir, `openapi.${extension}`), text);
    const result = spawnSync(
      process.execPath,
      [REDOCLY, 'lint', `openapi.${extension}`, '--format=json', '--extends=recommended', '--max-problems=1000'],
      {
        cwd: dir,
        encoding: 'utf8',
        timeout: 120_000,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true' },
      },
    );
    assert.ok(result.stdout.trim().startsWith('{'), `redocly did not report:\n${result.stdout}${result.stderr}`);
    const report = JSON.parse(result.stdout) as { totals: { ignored: number }; problems: Problem[] };
    assert.equal(report.totals.ignored, 0);
    return report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Media {
  schema?: { $ref?: string; properties?: Record<string, unknown> };
  example?: unknown;
  examples?: unknown;
}
interface Response {
  $ref?: string;
  content?: Record<string, Media>;
  links?: Record<string, { operationId: string; parameters: Record<string, string> }>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response>;
}
interface Document {
  tags: Array<{ name: string; description?: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties?: Record<string, unknown> }>;
    responses: Record<string, Response>;
  };
}

function operations(document: Document): Array<{ name: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
  );
}

/** Every object anywhere under `value` (to look for inline copies of component schemas). */
function* objectsIn(value: unknown): Generator<Record<string, unknown>> {
  if (typeof value !== 'object' || value === null) return;
  if (!Array.isArray(value)) yield value as Record<string, unknown>;
  for (const child of Object.values(value)) yield* objectsIn(child);
}

/** The checks the linter does not make: tags, descriptions, $refs instead of copies, examples, links. */
function assertDocumentedForTools(document: Document) {
  const declaredTags = new Map(document.tags.map((tag) => [tag.name, tag.description]));
  for (const { name, operation } of operations(document)) {
    assert.match(operation.operationId ?? '', /^[a-z][A-Za-z]+$/, `${name} has an operationId`);
    assert.ok(operation.summary && operation.description, `${name} has a summary and a description`);
    assert.equal(operation.tags?.length, 1, `${name} has one tag`);
    assert.ok(Object.values(TAGS).includes(operation.tags[0] as never), `${name}: tag ${operation.tags[0]}`);
    assert.ok(declaredTags.get(operation.tags[0]!), `${name}: its tag is declared with a description`);

    for (const [status, response] of Object.entries(operation.responses)) {
      if (/^([45]|default)/.test(status))
        assert.match(response.$ref ?? '', /^#\/components\/responses\/(Error\d{3}|OtherErrors)$/, `${name} ${status}`);
    }
    const bodies = [operation.requestBody as Response | undefined, ...Object.values(operation.responses)].map((body) =>
      body?.$ref ? document.components.responses[body.$ref.split('/').pop()!] : body,
    );
    for (const [type, media] of bodies.flatMap((body) => Object.entries(body?.content ?? {}))) {
      assert.ok(media.example !== undefined || media.examples !== undefined, `${name}: a ${type} body has an example`);
    }
  }
  for (const [component, schema] of Object.entries(document.components.schemas)) {
    const shape = JSON.stringify(Object.keys(schema.properties ?? {}).sort());
    for (const object of objectsIn(document.paths)) {
      if (typeof object.properties !== 'object' || object.properties === null) continue;
      assert.notEqual(JSON.stringify(Object.keys(object.properties).sort()), shape, `a copy of ${component} inline`);
    }
  }
}

/** addPlant's 200 links to each by-id plant operation the document has, by the id the request sent. */
function assertLinks(document: Document) {
  const byId = new Map(operations(document).map(({ operation }) => [operation.operationId, operation]));
  const links = byId.get('addPlant')!.responses['200']!.links ?? {};
  const targets = ['getPlant', 'updatePlant', 'deletePlant'].filter((operationId) => byId.has(operationId));
  assert.deepEqual(
    Object.values(links)
      .map((link) => link.operationId)
      .sort(),
    targets.sort(),
  );
  for (const link of Object.values(links)) {
    const pathParameters = byId
      .get(link.operationId)!
      .parameters?.filter((p) => p.in === 'path')
      .map((p) => p.name);
    assert.deepEqual(pathParameters, ['id'], link.operationId);
    assert.deepEqual(link.parameters, { id: '$request.body#/id' }, link.operationId);
  }
  return links;
}

describe('the served OpenAPI document is clean under Redocly and complete for generators and testers', () => {
  const s = realServer(sqlite);

  describe("has no error and no warning under Redocly's recommended rules", () => {
    it('as JSON', async () => {
      assert.deepEqual(redoclyProblems((await call(`${s.url}/openapi.json`)).text, 'json'), []);
    });
    it('as YAML', async () => {
      assert.deepEqual(redoclyProblems((await call(`${s.url}/openapi.yaml`)).text, 'yaml'), []);
    });
  });

  describe('gives every operation an operationId, a description and a declared tag, $refs instead of copies, and examples', () => {
    it('holds for every operation', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as Document;
      assertDocumentedForTools(document);
      const addPlant = document.paths['/plants']!.post!;
      assert.deepEqual(addPlant.requestBody!.content['application/json']!.schema, {
        $ref: '#/components/schemas/NewPlant',
      });
      assert.deepEqual(addPlant.responses['409'], { $ref: '#/components/responses/Error409' });
      const tags = document.tags.map((tag) => tag.name);
      assert.deepEqual(
        tags.filter((tag) => tag !== TAGS.webhooks),
        [TAGS.plants, TAGS.operations],
      );
    });
  });

  describe('links addPlant to the by-id operations, and only to operations it has', () => {
    it('names existing operations and their path parameter', async () => {
      const links = assertLinks((await call(`${s.url}/openapi.json`)).json as Document);
      assert.deepEqual(Object.keys(links).sort(), ['deletePlant', 'getPlant', 'updatePlant']);
    });
  });
});
