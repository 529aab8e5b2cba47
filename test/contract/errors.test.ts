import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { sqlite } from '../helpers/engines.js';
import { call, postPlant } from '../helpers/http.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** Sends raw bytes and resolves with everything the server answers before closing. */
function raw(url: string, bytes: string): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.end(bytes));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer')));
  });
}

/** The body of a chunked answer (ASCII), without its chunk sizes. */
function dechunk(body: string): string {
  let text = '';
  for (let at = 0; ;) {
    const end = body.indexOf('\r\n', at);
    const size = Number.parseInt(body.slice(at, end), 16);
    if (!(size > 0)) return text;
    text += body.slice(end + 2, end + 2 + size);
    at = end + 2 + size + 2;
  }
}

function parseRaw(answer: string) {
  const [head, body] = answer.split('\r\n\r\n', 2);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head!)?.[1]);
  return { status, head: head!, json: JSON.parse(body!) as unknown };
}

describe('every non-2xx response is the Error body', () => {
  const s = realServer(sqlite);

  describe('unknown path is 404', () => {
    for (const path of ['/', '/nope', '/plants/1', '/plants/', '/PLANTS', '/plants%00']) {
      it(`GET ${path}`, async () => {
        const reply = await call(`${s.url}${path}`, { token: s.token });
        assert.equal(reply.status, 404);
        assert.ok(isErrorBody(reply), reply.text);
      });
    }
  });

  describe('known path with a wrong method is 405 with Allow', () => {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      it(`${method} /plants`, async () => {
        const reply = await call(`${s.url}/plants`, { method, token: s.token });
        assert.equal(reply.status, 405);
        assert.ok(isErrorBody(reply));
        assert.equal(reply.headers.get('allow'), 'GET, HEAD, POST');
      });
    }
    it('POST /healthz', async () => {
      const reply = await call(`${s.url}/healthz`, { method: 'POST' });
      assert.equal(reply.status, 405);
      assert.ok(isErrorBody(reply), reply.text);
      assert.equal(reply.headers.get('allow'), 'GET, HEAD');
    });
    it('a method Fastify does not route (PROPFIND) on /plants', async () => {
      const { status, head, json } = parseRaw(
        await raw(s.url, 'PROPFIND /plants HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
      );
      assert.equal(status, 405);
      assert.match(head, /allow: GET, HEAD, POST/i);
      assert.match(head, /content-type: application\/json/i);
      assert.deepEqual(Object.keys(json as object).sort(), ['error', 'message']);
      assert.equal((json as { error: number }).error, 405);
    });
  });

  describe('more than 1,000 header fields is a 431 Error body: no header is ever dropped unread', () => {
    const request = (fillers: number) =>
      'GET /plants HTTP/1.1\r\nHost: x\r\n' +
      Array.from({ length: fillers }, (_, i) => `X-Filler-${i}: a\r\n`).join('') +
      `Authorization: Bearer ${s.token}\r\nConnection: close\r\n\r\n`;
    it('refuses an Authorization after 999 other fields with 431, not a 401 for a missing one', async () => {
      const { status, json } = parseRaw(await raw(s.url, request(999)));
      assert.equal(status, 431);
      assert.deepEqual(json, { error: 431, message: 'request has more than 1000 header fields' });
    });
    it('reads every one of 1,000 fields', async () => {
      // Host, 997 fillers, Authorization and Connection.
      assert.match(await raw(s.url, request(997)), /^HTTP\/1\.1 200 /);
    });
  });

  describe('requests the HTTP parser rejects get a 400 Error body', () => {
    const broken: Array<[string, string]> = [
      ['an unknown method', 'FOO /plants HTTP/1.1\r\nHost: x\r\n\r\n'],
      ['a malformed request line', 'GET\r\n\r\n'],
      ['a header without a colon', 'GET /plants HTTP/1.1\r\nHost: x\r\nBroken header\r\n\r\n'],
      ['a bad Content-Length', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'],
      ['garbage', '\x00\x01\x02 hello\r\n\r\n'],
    ];
    for (const [what, bytes] of broken) {
      it(what, async () => {
        const { status, head, json } = parseRaw(await raw(s.url, bytes));
        assert.equal(status, 400);
        assert.match(head, /content-type: application\/json/i);
        assert.deepEqual(Object.keys(json as object).sort(), ['error', 'message']);
        assert.equal((json as { error: number }).error, 400);
        // llhttp's own words for what it rejected follow.
        assert.match((json as { message: string }).message, /^malformed HTTP request(?: line)?: \w/);
      });
    }
  });

  describe('a character not allowed in a URL is a 400 saying to percent-encode it, and how', () => {
    const message = async (requestLine: string) => {
      const { status, json } = parseRaw(await raw(s.url, `${requestLine}\r\nHost: x\r\n\r\n`));
      assert.equal(status, 400);
      return (json as { message: string }).message;
    };
    const curl = " (with curl: -G --data-urlencode 'name=value')";

    it('names raw UTF-8 in the query (what curl sends for ?q=ελιά) and its encoding', async () => {
      assert.equal(
        await message('GET /plants?q=ελιά HTTP/1.1'),
        `a character in the URL's query must be percent-encoded: "ε" is %CE%B5${curl}`,
      );
    });

    it('names it in the path, a character outside the BMP whole', async () => {
      assert.equal(
        await message('GET /plants/🌿 HTTP/1.1'),
        `a character in the URL's path must be percent-encoded: "🌿" is %F0%9F%8C%BF${curl}`,
      );
    });

    it('names a control byte by its value', async () => {
      assert.equal(
        await message('GET /plants?q=a\x01 HTTP/1.1'),
        `a character in the URL's query must be percent-encoded: byte 0x01 is %01${curl}`,
      );
    });

    it('says a space in the URL must be %20', async () => {
      assert.equal(
        await message('GET /plants?q=white oak HTTP/1.1'),
        'malformed HTTP request line: a space in the URL must be percent-encoded (%20)',
      );
    });

    it('answers the same search percent-encoded', async () => {
      const reply = await call(`${s.url}/plants?q=${encodeURIComponent('ελιά')}`, { token: s.token });
      assert.equal(reply.status, 200);
    });
  });

  describe('a valid request pipelined before bad bytes is answered first, then the 400', () => {
    it('answers GET /healthz 200, then the garbage after it 400, in order, then closes', async () => {
      const answer = await raw(s.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nBROKEN LINE\r\n\r\n');
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => Number(match[1]));
      assert.deepEqual(statuses, [200, 400], answer);
      assert.match(answer, /"error":400,"message":"malformed HTTP request: invalid method encountered"/);
    });

    it('answers an authenticated GET /plants 200 before the 400', async () => {
      const answer = await raw(
        s.url,
        `GET /plants?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\n\r\n\x00junk\r\n\r\n`,
      );
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((match) => Number(match[1]));
      assert.deepEqual(statuses, [200, 400], answer);
      assert.match(answer, /\r\n\r\n(?:[\da-f]+\r\n)?\[/, 'the page before the 400');
      assert.match(answer, /"error":400,"message":"malformed HTTP request: invalid method encountered"/);
    });
  });

  describe('an Expect other than 100-continue is 417 with the Error body', () => {
    it('refuses Expect: foo', async () => {
      const { status, head, json } = parseRaw(
        await raw(s.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n'),
      );
      assert.equal(status, 417);
      assert.match(head, /content-type: application\/json/i);
      assert.deepEqual(Object.keys(json as object).sort(), ['error', 'message']);
      assert.equal((json as { error: number }).error, 417);
    });
  });

  describe('HEAD /plants behaves as GET without a body', () => {
    /** The status line and headers, less those that differ between any two answers (or that only a body needs). */
    const headers = (head: string) =>
      head
        .split('\r\n')
        .filter((line) => !/^(date|x-request-id|transfer-encoding):/i.test(line))
        .sort();
    const ask = (method: string, authorization: string) =>
      raw(s.url, `${method} /plants HTTP/1.1\r\nHost: x\r\n${authorization}Connection: close\r\n\r\n`);

    it('answers 200 with a token and 401 without, with the headers GET sends and no body', async () => {
      assert.equal((await postPlant(s.url, s.token, { id: 1, name: 'head' })).status, 200);
      for (const [authorization, status, body] of [
        [`Authorization: Bearer ${s.token}\r\n`, 200, /^\[\{"name":"head"\}\]$/],
        ['', 401, /"error":401/],
      ] as const) {
        const get = await ask('GET', authorization);
        const head = await ask('HEAD', authorization);
        const [getHead, getBody] = get.split('\r\n\r\n', 2) as [string, string];
        const [headHead, headBody] = head.split('\r\n\r\n', 2) as [string, string];
        assert.match(headHead, new RegExp(`^HTTP/1\\.1 ${status} `));
        assert.deepEqual(headers(headHead), headers(getHead));
        assert.match(/transfer-encoding: chunked/i.test(getHead) ? dechunk(getBody) : getBody, body);
        assert.equal(headBody, '', 'HEAD sends no body');
      }
    });
  });

  describe('the operational endpoints need no token', () => {
    for (const path of ['/healthz', '/readyz', '/metrics', '/openapi.json', '/openapi.yaml', '/docs']) {
      it(`GET ${path} is 200`, async () => {
        assert.equal((await call(`${s.url}${path}`)).status, 200);
      });
    }
  });
});
