import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { sqlite } from '../helpers/engines.js';
import { call } from '../helpers/http.js';
import { openFeed } from '../helpers/sse.js';
import { realServer } from '../helpers/suite.js';

interface Document {
  openapi: string;
  info: { title: string; version: string; license: { name: string } };
  components: {
    securitySchemes: Record<string, { type: string; scheme: string }>;
    responses: Record<string, { description: string }>;
  };
  paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown[] }>>;
}

describe('GET /openapi.json and /openapi.yaml: the OpenAPI 3.0.1 document', () => {
  const s = realServer(sqlite);

  describe('is valid against the OpenAPI 3.0 schema', () => {
    it('validates', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json;
      const result = await new Validator().validate(document as Parameters<Validator['validate']>[0]);
      assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
    });
    it('serves the same document as YAML', async () => {
      const reply = await call(`${s.url}/openapi.yaml`);
      assert.equal(reply.status, 200);
      assert.match(reply.headers.get('content-type') ?? '', /yaml/);
      assert.match(reply.text, /^openapi: 3\.0\.1$/m);
      const result = await new Validator().validate(reply.text);
      assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
    });
  });

  describe('carries the identity of the interface and its rules', () => {
    it('has the title, version, license and bearerAuth scheme', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as Document;
      assert.equal(document.openapi, '3.0.1');
      assert.equal(document.info.title, 'OpenAPI Plant Store');
      assert.equal(document.info.version, '1.0.0');
      assert.equal(document.info.license.name, 'MIT');
      assert.deepEqual(document.components.securitySchemes.bearerAuth, {
        ...document.components.securitySchemes.bearerAuth,
        type: 'http',
        scheme: 'bearer',
      });
    });
    it('documents every status of each operation, and all the others in its default response', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as Document;
      const post = document.paths['/plants']!.post!.responses;
      const get = document.paths['/plants']!.get!.responses;
      assert.deepEqual(Object.keys(post), [
        '200',
        '400',
        '401',
        '403',
        '409',
        '413',
        '415',
        '429',
        '500',
        '503',
        'default',
      ]);
      assert.deepEqual(Object.keys(get), ['200', '400', '401', '403', '415', '429', '500', '503', 'default']);
      assert.deepEqual(post['413'], { $ref: '#/components/responses/Error413' });
      assert.deepEqual(get.default, { $ref: '#/components/responses/OtherErrors' });
      const others = document.components.responses.OtherErrors!.description;
      for (const status of [404, 405, 408, 417, 431]) assert.match(others, new RegExp(`\\b${status}\\b`));
    });
  });

  describe('declares the If-Match it accepts: * or a list of entity tags, anything else a 400', () => {
    it("gives If-Match of updatePlant and deletePlant a pattern that ETags match and 55' does not", async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as {
        paths: Record<
          string,
          Record<string, { parameters: Array<{ name: string; in: string; schema: { pattern?: string } }> }>
        >;
      };
      for (const method of ['patch', 'delete']) {
        const header = document.paths['/plants/{id}']![method]!.parameters.find(
          (p) => p.in === 'header' && p.name.toLowerCase() === 'if-match',
        );
        assert.ok(header?.schema.pattern, method);
        const pattern = new RegExp(header.schema.pattern);
        for (const good of ['*', '"2kx9f3q1m7v0a"', 'W/"a"', '"a", "b"']) assert.match(good, pattern, good);
        for (const bad of ["55'", 'abc', '"unclosed', '*, "a"']) assert.doesNotMatch(bad, pattern, bad);
      }
    });
  });

  describe('declares an empty If-Match and an empty or made-up cursor refused, as the server refuses them', () => {
    type Parameter = { name: string; in: string; schema: { pattern?: string; minLength?: number } };
    const parameter = async (path: string, method: string, where: string, name: string) => {
      const document = (await call(`${s.url}/openapi.json`)).json as {
        paths: Record<string, Record<string, { parameters: Parameter[] }>>;
      };
      const found = document.paths[path]![method]!.parameters.find(
        (p) => p.in === where && p.name.toLowerCase() === name,
      );
      assert.ok(found?.schema.pattern, `${method} ${path}: ${name}`);
      return { ...found.schema, pattern: new RegExp(found.schema.pattern) };
    };

    it('gives If-Match of updatePlant and deletePlant a minLength of 1, and answers an empty one 400', async () => {
      for (const method of ['PATCH', 'DELETE']) {
        const schema = await parameter('/plants/{id}', method.toLowerCase(), 'header', 'if-match');
        assert.equal(schema.minLength, 1);
        assert.doesNotMatch('', schema.pattern);
        const reply = await call(`${s.url}/plants/1`, {
          method,
          token: s.token,
          headers: { 'if-match': '', 'content-type': 'application/merge-patch+json' },
          body: method === 'PATCH' ? '{"name": "x"}' : undefined,
        });
        assert.equal(reply.status, 400, method);
        assert.match((reply.json as { message: string }).message, /If-Match/);
      }
    });

    it("gives after and Last-Event-ID of GET /events the cursor's pattern: the feed's own cursors match it", async () => {
      const after = await parameter('/events', 'get', 'query', 'after');
      const lastEventId = await parameter('/events', 'get', 'header', 'last-event-id');
      assert.equal(String(after.pattern), String(lastEventId.pattern));
      const feed = await openFeed(s.url, { token: s.token });
      try {
        const [ready] = await feed.take(1);
        assert.match(ready!.id!, after.pattern);
      } finally {
        feed.close();
      }
      for (const bad of ['', 'x', 'not a cursor at all!!']) {
        assert.doesNotMatch(bad, after.pattern, bad);
        const reply = await call(`${s.url}/events?after=${encodeURIComponent(bad)}`, {
          token: s.token,
          headers: { accept: 'text/event-stream' },
        });
        assert.equal(reply.status, 400, bad);
      }
    });
  });

  describe("each pattern means the same in ECMAScript and in Python's re (generators and testers read it so)", () => {
    /** Every `pattern` of the document, and the examples beside each. */
    function patternsOf(node: unknown, found = new Map<string, string[]>()): Map<string, string[]> {
      if (typeof node !== 'object' || node === null) return found;
      const schema = node as { pattern?: unknown; example?: unknown; examples?: unknown };
      if (typeof schema.pattern === 'string') {
        const examples = [schema.example, ...(Array.isArray(schema.examples) ? schema.examples : [])];
        found.set(schema.pattern, [
          ...(found.get(schema.pattern) ?? []),
          ...examples.filter((e): e is string => typeof e === 'string'),
        ]);
      }
      for (const child of Object.values(node)) patternsOf(child, found);
      return found;
    }
    /** Where dialects part: whitespace and line ends beyond space and tab, Unicode digits, letters and case. */
    const EDGES = [
      ...'\t\n\v\f\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2028\u2029\u3000\ufeff\x00\x7f\x80\xff\u0100',
      ...'\u017f\u212a\u0663\u00e9_-,"*AaZz09😀',
    ];
    /** Each seed, with each edge character before, after, in place of and beside each of its characters. */
    function variants(seed: string): string[] {
      const out = [seed];
      const chars = [...seed];
      for (const edge of EDGES) {
        out.push(edge + seed, seed + edge, edge, seed + edge + edge);
        for (let i = 0; i < chars.length; i++) {
          out.push([...chars.slice(0, i), edge, ...chars.slice(i + 1)].join(''));
          out.push([...chars.slice(0, i), edge, ...chars.slice(i)].join(''));
        }
      }
      return out;
    }

    it('answers alike for every example of each pattern changed by each edge character', async () => {
      const patterns = patternsOf((await call(`${s.url}/openapi.json`)).json);
      assert.ok(patterns.size >= 4, `patterns: ${[...patterns.keys()]}`);
      const cases = [...patterns].map(([pattern, examples]) => ({
        pattern,
        candidates: [...new Set([...examples, 'x', '*', '"a", "b"', 'id,name'].flatMap(variants))],
      }));
      const python = spawnSync(
        'python3',
        [
          '-c',
          'import json, re, sys\n' +
            'cases = json.load(sys.stdin)\n' +
            'json.dump([[re.search(c["pattern"], s) is not None for s in c["candidates"]] for c in cases], sys.stdout)',
        ],
        { input: JSON.stringify(cases), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      );
      assert.equal(python.status, 0, python.stderr);
      const answers = JSON.parse(python.stdout) as boolean[][];
      for (const [i, { pattern, candidates }] of cases.entries()) {
        const differ = candidates.filter((candidate, j) => {
          const inPython = answers[i]![j]!;
          return (
            new RegExp(pattern).test(candidate) !== inPython || new RegExp(pattern, 'u').test(candidate) !== inPython
          );
        });
        assert.deepEqual(
          differ,
          [],
          `${pattern} reads differently in Python for ${JSON.stringify(differ.slice(0, 5))}`,
        );
      }
    });
  });

  describe('declares the Retry-After that a 429 and a 503 carry (the client waits for it)', () => {
    it('gives Error429 and Error503 a Retry-After header of integer seconds', async () => {
      const document = (await call(`${s.url}/openapi.json`)).json as {
        components: { responses: Record<string, { headers?: Record<string, { schema?: { type?: string } }> }> };
      };
      for (const name of ['Error429', 'Error503']) {
        const header = document.components.responses[name]?.headers?.['Retry-After'];
        assert.equal(header?.schema?.type, 'integer', name);
      }
    });
  });

  describe('GET /docs is an interactive reference served by the package itself', () => {
    it('references only local scripts and styles, and serves them', async () => {
      const page = await call(`${s.url}/docs/`);
      assert.equal(page.status, 200);
      const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
      assert.ok(assets.length >= 3);
      for (const asset of assets) {
        assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} must not come from elsewhere`);
        const reply = await call(new URL(asset, `${s.url}/docs/`).toString());
        assert.equal(reply.status, 200, asset);
      }
      assert.match(page.text, /<title>Plant Store API reference<\/title>/);
      const uiConfig = await call(`${s.url}/docs/ui-config.json`);
      assert.deepEqual(uiConfig.json, { url: '/openapi.json' }, 'the page loads the document clients use');
    });
  });
});
