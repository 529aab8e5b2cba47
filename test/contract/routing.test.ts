import assert from 'node:assert/strict';
import http from 'node:http';
import { before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ENGINES } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';
import { assertErrorBody, rawExchange } from '../helpers/raw-http.js';

/**
 * The contract's routing rules ("Everything else"): unknown path -> 404; known path, wrong method
 * -> 405 with Allow. Routing decides first, whatever the body, its Content-Type, length or
 * encoding, and whether or not the request has a token. The matrix: every method x known and
 * unknown paths x bodies good, bad and missing, with and without a token.
 */

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'QUERY'];
const GOOD = '{"id":1,"name":"Routed"}';

interface Body {
  what: string;
  headers: Record<string, string>;
  bytes: Buffer;
}

const BODIES: Body[] = [
  { what: 'no body', headers: {}, bytes: Buffer.alloc(0) },
  { what: 'good JSON', headers: { 'content-type': 'application/json' }, bytes: Buffer.from(GOOD) },
  { what: 'malformed JSON', headers: { 'content-type': 'application/json' }, bytes: Buffer.from('{"id":1,') },
  { what: 'an empty body typed JSON', headers: { 'content-type': 'application/json' }, bytes: Buffer.alloc(0) },
  {
    what: 'Content-Type: application/json, text/plain',
    headers: { 'content-type': 'application/json, text/plain' },
    bytes: Buffer.from(GOOD),
  },
  { what: 'text/plain', headers: { 'content-type': 'text/plain' }, bytes: Buffer.from('just text') },
  {
    what: 'gzip Content-Encoding',
    headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    bytes: gzipSync(GOOD),
  },
];

/** The known paths and their methods, as the contract's Allow headers write them. */
const KNOWN: Record<string, string> = {
  '/plants': 'GET, HEAD, POST',
  '/plants/1': 'GET, HEAD, PATCH, DELETE',
};
const UNKNOWN = ['/nope', '/plants/1/x', '/plants/'];

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** Any method with any body (fetch refuses a body on GET and HEAD), each on its own connection. */
function send(base: string, method: string, path: string, body: Body, token?: string): Promise<Answer> {
  const headers: http.OutgoingHttpHeaders = { ...body.headers, 'content-length': body.bytes.length };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return new Promise((resolve, reject) => {
    const request = http.request(`${base}${path}`, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode!,
          headers: response.headers,
          text: Buffer.concat(chunks).toString(),
        }),
      );
    });
    request.on('error', reject);
    request.end(body.bytes);
  });
}

function assertRoutingError(answer: Answer, method: string, status: number, context: string) {
  assert.equal(answer.status, status, `${context}: ${answer.text}`);
  if (method === 'HEAD') {
    assert.match(answer.headers['content-type'] ?? '', /^application\/json/, context);
    assert.equal(answer.text, '', `${context}: HEAD has no body`);
  } else {
    assertErrorBody(status, answer.headers['content-type'], answer.text, context);
  }
}

/**
 * What a method a path has answers, with the token: operations that take no body ignore what is
 * sent; those that take one read it (after authentication and routing, never before).
 */
function allowedAnswer(method: string, body: Body): number {
  // Bodies are never decompressed: an encoded one is refused by every operation.
  if (body.headers['content-encoding'] !== undefined && body.bytes.length > 0) return 415;
  if (method === 'GET' || method === 'HEAD') return 200;
  // A Content-Type that is not a media type at all is refused even where the body would be ignored.
  if (method === 'DELETE') return body.headers['content-type']?.includes(',') ? 415 : 204;
  if (body.headers['content-type'] !== 'application/json') return 415;
  if (body.bytes.length === 0 || body.what === 'malformed JSON') return 400;
  return 200; // a create of plant 1 again (a safe retry), or a PATCH that sets what it has
}

for (const engine of ENGINES) {
  describe(`routing decides first, whatever the body (${engine.name})`, () => {
    const s = realServer(engine);
    before(async () => {
      assert.equal((await postPlant(s.url, s.token, GOOD)).status, 200);
    });

    describe('an unknown path is 404 with the Error body, whatever the method, body or token', () => {
      for (const path of UNKNOWN) {
        for (const method of METHODS) {
          it(`${method} ${path}`, async () => {
            for (const body of BODIES) {
              for (const token of [s.token, undefined]) {
                const context = `${method} ${path} with ${body.what}, ${token ? 'a token' : 'no token'}`;
                assertRoutingError(await send(s.url, method, path, body, token), method, 404, context);
              }
            }
          });
        }
      }
    });

    describe('a known path with a wrong method is 405 with Allow and the Error body, whatever the body or token', () => {
      for (const [path, allow] of Object.entries(KNOWN)) {
        for (const method of METHODS.filter((m) => !allow.split(', ').includes(m))) {
          it(`${method} ${path} -> Allow: ${allow}`, async () => {
            for (const body of BODIES) {
              for (const token of [s.token, undefined]) {
                const context = `${method} ${path} with ${body.what}, ${token ? 'a token' : 'no token'}`;
                const answer = await send(s.url, method, path, body, token);
                assertRoutingError(answer, method, 405, context);
                assert.equal(answer.headers.allow, allow, context);
              }
            }
          });
        }
      }
    });

    describe('a known path with its method authenticates before it reads the body', () => {
      for (const [path, allow] of Object.entries(KNOWN)) {
        for (const method of allow.split(', ')) {
          it(`${method} ${path}: 401 without a token, whatever the body; with one, the body is judged`, async () => {
            for (const body of BODIES) {
              const context = `${method} ${path} with ${body.what}`;
              const anonymous = await send(s.url, method, path, body);
              assertRoutingError(anonymous, method, 401, `${context}, no token`);
              const expected = allowedAnswer(method, body);
              const answer = await send(s.url, method, path, body, s.token);
              assert.equal(answer.status, expected, `${context}, a token: ${answer.text}`);
              if (expected >= 400 && method !== 'HEAD') {
                assertErrorBody(expected, answer.headers['content-type'], answer.text, context);
              }
              if (method === 'DELETE') assert.equal((await postPlant(s.url, s.token, GOOD)).status, 200);
            }
          });
        }
      }
    });

    describe('a QUERY request with neither body nor Content-Type is routed like any other method', () => {
      const cases: [string, number][] = [
        ['/plants', 405],
        ['/plants/1', 405],
        ['/nope', 404],
        ['/plants/1/x', 404],
      ];
      for (const [path, status] of cases) {
        it(`QUERY ${path} -> ${status}, with and without a token`, async () => {
          const { port } = new URL(s.url);
          for (const authorization of [`Authorization: Bearer ${s.token}\r\n`, '']) {
            const exchange = await rawExchange(
              Number(port),
              `QUERY ${path} HTTP/1.1\r\nHost: localhost\r\n${authorization}Connection: close\r\n\r\n`,
            );
            const [response] = exchange.responses;
            assert.ok(response, `an answer: ${exchange.raw.toString()}`);
            assert.equal(response.status, status, exchange.raw.toString());
            assertErrorBody(status, response.headers['content-type'], response.body.toString(), path);
            if (status === 405) assert.equal(response.headers.allow, KNOWN[path]);
          }
        });
      }
    });

    describe('a request body with a Content-Encoding other than identity is 415 (bodies are not decompressed)', () => {
      for (const encoding of ['gzip', 'deflate', 'br', 'identity, gzip']) {
        it(`POST /plants with Content-Encoding: ${encoding}`, async () => {
          const body: Body = {
            what: encoding,
            headers: { 'content-type': 'application/json', 'content-encoding': encoding },
            bytes: encoding === 'gzip' ? gzipSync('{"id":2,"name":"zipped"}') : Buffer.from('{"id":2,"name":"zipped"}'),
          };
          const answer = await send(s.url, 'POST', '/plants', body, s.token);
          assertRoutingError(answer, 'POST', 415, encoding);
          assert.match(answer.text, /Content-Encoding/);
        });
      }
      it('POST /plants with Content-Encoding: identity is read as usual', async () => {
        const body: Body = {
          what: 'identity',
          headers: { 'content-type': 'application/json', 'content-encoding': 'identity' },
          bytes: Buffer.from('{"id":3,"name":"plain"}'),
        };
        const answer = await send(s.url, 'POST', '/plants', body, s.token);
        assert.equal(answer.status, 200, answer.text);
        assert.deepEqual(JSON.parse(answer.text), { name: 'plain' });
      });
    });
  });
}
