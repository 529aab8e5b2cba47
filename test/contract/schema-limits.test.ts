import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { call, type Reply } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';
import { registerEndpoint, WEBHOOK_TEST_ARGS } from '../helpers/webhooks.js';

/**
 * Every limit the served document states is the server's: for each maxLength, minLength,
 * maximum, minimum, maxItems and minItems of every request body, query, header and path
 * parameter, a request holding the limit itself is accepted (no 400) and one just past it is a 400
 * naming the field. The limits are read from GET /openapi.json, so a limit added to a schema is
 * tested without a line here; a string whose pattern or format a filler cannot meet needs a
 * value below (FORMED), else the test fails rather than skip it.
 */

interface Schema {
  $ref?: string;
  type?: string;
  format?: string;
  pattern?: string;
  enum?: unknown[];
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  example?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}
interface Parameter {
  in: 'query' | 'path' | 'header';
  name: string;
  schema: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema; example?: unknown }> };
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const LIMIT_KEYWORDS = ['minLength', 'maxLength', 'minimum', 'maximum', 'minItems', 'maxItems'] as const;
type LimitKeyword = (typeof LIMIT_KEYWORDS)[number];

/** Characters outside the BMP (two UTF-16 units each): a limit counts code points, as JSON Schema does. */
const ASTRAL = '\u{1F33F}';

/** Values of a given length for strings a run of one character cannot stand for, by field. */
const FORMED: Record<string, (length: number) => string> = {
  url: (length) => `http://127.0.0.1/${ASTRAL.repeat(length - 'http://127.0.0.1/'.length)}`,
  'if-match': (length) => (length === 0 ? '' : length === 1 ? '*' : `"${'a'.repeat(length - 2)}"`),
};

/** The webhooks' examples name a public host; the test server's receivers are local. */
const LOCAL_URL = 'http://127.0.0.1:9/hook';
const example = (schema: Schema) =>
  schema.properties?.url === undefined ? (schema.example as object) : { ...(schema.example as object), url: LOCAL_URL };

/** One limit: where it stands, and how to build a request input holding a value at a given size. */
interface Limit {
  name: string;
  /** The field a 400 must name. */
  field: string;
  keyword: LimitKeyword;
  value: number;
  request(size: number): Request;
}
interface Request {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: unknown;
}

function resolve(document: Document, schema: Schema): Schema {
  return schema.$ref === undefined ? schema : document.components.schemas[schema.$ref.split('/').pop()!]!;
}

/** A value of `schema` whose size (length, number, item count) is `size`; `field` names it in a 400. */
function valueOfSize(document: Document, schema: Schema, field: string, size: number): unknown {
  const own = schema.anyOf?.find((member) => member.type !== 'null') ?? schema;
  if (own.type === 'integer' || own.type === 'number') return size;
  if (own.type === 'array') {
    return Array.from({ length: size }, (_, i) => itemValue(document, resolve(document, own.items!), field, i));
  }
  const formed = FORMED[field.replace(/^.*\./, '')];
  if (formed !== undefined) return formed(size);
  assert.ok(
    own.pattern === undefined && own.format === undefined,
    `${field}: a value of its pattern or format is in FORMED`,
  );
  return ASTRAL.repeat(size);
}

/** The i-th item of an array: a plant with its own id, an enum's value, or a short string. */
function itemValue(document: Document, items: Schema, field: string, i: number): unknown {
  if (items.enum !== undefined) return items.enum[i % items.enum.length];
  if (items.type === 'object') return { ...(items.example as object), id: 1000 + i };
  return valueOfSize(document, items, field, 1);
}

/** Every limit of a schema reached from `field`, with how to put a value of a size there. */
function* limitsOf(
  document: Document,
  schema: Schema,
  field: string,
  place: (value: unknown) => Request,
  depth = 0,
): Generator<Limit> {
  const own = resolve(document, schema);
  for (const member of own.anyOf ?? []) yield* limitsOf(document, member, field, place, depth);
  for (const keyword of LIMIT_KEYWORDS) {
    const value = own[keyword];
    if (value === undefined) continue;
    yield {
      name: `${field || 'the body'} ${keyword} ${value}`,
      field: field || 'request body',
      keyword,
      value,
      request: (size) => place(valueOfSize(document, own, field, size)),
    };
  }
  if (own.type === 'object') {
    for (const [name, property] of Object.entries(own.properties ?? {})) {
      const inner = field === '' ? name : `${field}.${name}`;
      yield* limitsOf(document, property, inner, (value) => place({ ...example(own), [name]: value }), depth);
    }
  }
  // An array of objects: its first item's limits (a batch's plant), the others as the example has them.
  if (own.type === 'array' && depth === 0 && resolve(document, own.items!).type === 'object') {
    const example = own.example as unknown[];
    yield* limitsOf(
      document,
      resolve(document, own.items!),
      `${field}[0]`,
      (value) => place([value, ...example.slice(1)]),
      1,
    );
  }
}

/** Every limit of every operation's inputs, each with a request that is valid but for the value it varies. */
function allLimits(document: Document, pathIds: Record<string, string>): Limit[] {
  const limits: Limit[] = [];
  for (const [template, operations] of Object.entries(document.paths)) {
    const path = template.replace('{id}', pathIds[template.split('/')[1]!] ?? '');
    for (const [method, operation] of Object.entries(operations)) {
      const base: Request = { method: method.toUpperCase(), path, query: '', headers: {} };
      const content = Object.entries(operation.requestBody?.content ?? {})[0];
      if (content !== undefined) {
        const [type, { schema, example }] = content;
        base.headers['content-type'] = type;
        base.body = example;
        const place = (body: unknown) => ({ ...base, body });
        for (const limit of limitsOf(document, schema, '', place)) {
          limits.push({ ...limit, name: `${base.method} ${template} body: ${limit.name}` });
        }
      }
      for (const parameter of operation.parameters ?? []) {
        const place = (value: unknown): Request => {
          if (parameter.in === 'header')
            return { ...base, headers: { ...base.headers, [parameter.name]: String(value) } };
          if (parameter.in === 'query') {
            const values = [value].flat().map((each) => `${parameter.name}=${encodeURIComponent(String(each))}`);
            return { ...base, query: values.join('&') };
          }
          return { ...base, path: template.replace(`{${parameter.name}}`, encodeURIComponent(String(value))) };
        };
        for (const limit of limitsOf(document, parameter.schema, parameter.name, place)) {
          limits.push({ ...limit, name: `${base.method} ${template} ${parameter.in}: ${limit.name}` });
        }
      }
    }
  }
  return limits;
}

function send(base: string, token: string, request: Request): Promise<Reply> {
  const url = `${base}${request.path}${request.query === '' ? '' : `?${request.query}`}`;
  const body = request.body === undefined ? undefined : JSON.stringify(request.body);
  return call(url, { method: request.method, headers: request.headers, body, token });
}

/** The size just past a limit: one under a minimum, one over a maximum. */
const pastIt = ({ keyword, value }: Limit) => (keyword.startsWith('min') ? value - 1 : value + 1);

for (const engine of ENGINES) {
  describe(
    `every limit of the served document is the server's: the limit is accepted, one past it is a 400 naming the field (${engine.name})`,
    {
      skip: engine.skip,
    },
    () => {
      const s = realServer(engine, WEBHOOK_TEST_ARGS);
      let limits: Limit[] = [];
      before(async () => {
        const plant = await call(`${s.url}/plants`, {
          method: 'POST',
          token: s.token,
          headers: { 'content-type': 'application/json' },
          body: '{"id":1,"name":"Monstera deliciosa","tag":"aroid"}',
        });
        assert.ok(plant.status < 300, `the plant the by-id operations use: ${plant.status} ${plant.text}`);
        const endpoint = await registerEndpoint(s.url, s.token, { url: LOCAL_URL });
        const document = (await call(`${s.url}/openapi.json`)).json as Document;
        limits = allLimits(document, { plants: '1', webhooks: endpoint.id });
      });

      it('finds the limits of the plants, listings, batches, webhooks and deliveries', () => {
        const names = limits.map(({ name }) => name);
        for (const expected of [
          'POST /plants body: name maxLength 256',
          'POST /plants/batch body: the body maxItems 1000',
          'POST /plants/batch body: [0].name minLength 1',
          'PATCH /plants/{id} body: tag maxLength 256',
          'GET /plants query: tag maxItems 16',
          'GET /plants query: q minLength 1',
          'GET /plants query: limit maximum 2147483647',
          'POST /webhooks body: url maxLength 2048',
          'GET /webhooks/{id}/deliveries query: limit minimum 1',
        ]) {
          assert.ok(
            names.includes(expected),
            `${expected} is among the ${names.length} limits found: ${names.join('; ')}`,
          );
        }
      });

      it('accepts each limit and refuses one past it, naming the field', async (t) => {
        assert.ok(limits.length > 0, 'the document states limits');
        for (const limit of limits) {
          await t.test(limit.name, async () => {
            const at = await send(s.url, s.token, limit.request(limit.value));
            assert.notEqual(at.status, 400, `${limit.name}: the limit itself is accepted, saw ${at.status} ${at.text}`);
            const past = await send(s.url, s.token, limit.request(pastIt(limit)));
            const message = (past.json as { message?: string } | undefined)?.message ?? '';
            assert.equal(
              past.status,
              400,
              `${limit.name}: ${pastIt(limit)} is refused, saw ${past.status} ${past.text}`,
            );
            assert.ok(
              message.toLowerCase().startsWith(`${limit.field.toLowerCase()} `),
              `${limit.name}: the 400 names ${limit.field}, saw "${message}"`,
            );
          });
        }
      });
    },
  );
}
