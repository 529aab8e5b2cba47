import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { hashSecret } from '../../src/auth/api-tokens.js';
import { openStorage } from '../../src/storage/open.js';
import { testApp } from '../helpers/app.js';
import { ENGINES, type Engine } from '../helpers/engines.js';
import { createToken, runCli, startServer } from '../helpers/server.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneShot } from '../helpers/load.js';
import { rawExchange } from '../helpers/raw-http.js';

/**
 * Security hygiene (SECURITY.md states the threat model these tests stand behind):
 * token secrets never reach logs, error messages or the store; a token is found by the hash of
 * its secret; every answer carries the security headers that fit it.
 */

/** The OWASP REST set: exactly these on every JSON answer, including the raw ones Fastify never sees. */
const API_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};
/** Helmet's browser headers beyond that set: for the /docs page only. */
const PAGE_ONLY_HEADERS = [
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
  'origin-agent-cluster',
  'referrer-policy',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
];

/** Fails unless `headers` (lower-case names) carry exactly the API set and no browser header of Helmet's. */
function assertApiHeaders(headers: (name: string) => string | null | undefined, what: string) {
  for (const [name, value] of Object.entries(API_HEADERS)) assert.equal(headers(name), value, `${what}: ${name}`);
  for (const name of [...PAGE_ONLY_HEADERS, 'strict-transport-security'])
    assert.equal(headers(name) ?? null, null, `${what}: no ${name}`);
}

/** A real server on a new store of `engine`, both gone when the test `t` ends. */
async function serverOnFreshStore(engine: Engine, t: TestContext) {
  const { url: database, drop } = await engine.fresh();
  t.after(drop);
  const server = await startServer({ database });
  t.after(() => server.stop('SIGKILL'));
  return { database, server };
}

function randomApiToken(): string {
  return 'pst_' + randomBytes(32).toString('base64url');
}

/** Every string the store holds, all tables, all columns, as text; and its files' bytes (SQLite). */
async function everythingStored(engine: Engine, database: string): Promise<string> {
  if (engine.name === 'sqlite') {
    const path = database.slice('sqlite:'.length);
    const db = new Database(path, { readonly: true });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
      const rows = tables.map(({ name }) =>
        JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).raw().all(), (_k, v) =>
          typeof v === 'bigint' ? String(v) : v,
        ),
      );
      const files = ['', '-wal', '-shm', '-journal']
        .filter((s) => existsSync(path + s))
        .map((s) => readFileSync(path + s).toString('latin1'));
      return [...rows, ...files].join('\n');
    } finally {
      db.close();
    }
  }
  const sql = postgres(database, { max: 1, onnotice: () => {} });
  try {
    const tables = await sql<Array<{ schema: string; name: string }>>`
      SELECT table_schema AS schema, table_name AS name FROM information_schema.tables
      WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`;
    const dumps = await Promise.all(
      tables.map(({ schema, name }) => sql.unsafe(`SELECT row_to_json(t)::text AS row FROM "${schema}"."${name}" t`)),
    );
    return dumps.flatMap((rows) => rows.map((r) => String(r.row))).join('\n');
  } finally {
    await sql.end();
  }
}

for (const engine of ENGINES) {
  describe(`token secrets never appear in logs, error messages or command output (${engine.name})`, () => {
    it('sends valid, read-only, revoked, expired and made-up tokens every way a client might, then finds none of them anywhere', async (t) => {
      const { url: database, drop } = await engine.fresh();
      t.after(drop);
      const valid = await createToken(database, 'sec');
      const readOnly = await createToken(database, 'sec', ['--scopes', 'plants:read']);
      const revoked = await createToken(database, 'sec');
      assert.equal(runCli(['token', 'revoke', revoked.id, '--database', database]).status, 0);
      const expired = await createToken(database, 'sec', ['--expires', '1s']);
      const madeUp = randomApiToken();
      const secrets = [
        valid.token,
        readOnly.token,
        revoked.token,
        expired.token,
        madeUp,
        'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzZWMifQ.c2lnbmF0dXJl',
      ];
      // The most talkative log level: anything that could log a header would do it here.
      const [server] = await Promise.all([startServer({ database, args: ['--log-level', 'trace'] }), sleep(1_100)]);
      // (and `expired` is past its time now)
      t.after(() => server.stop('SIGKILL'));
      assert.equal(server.firstToken, null, 'the store had tokens: no first token is printed');
      const port = Number(new URL(server.url).port);

      const answers: string[] = [];
      const send = async (
        path: string,
        init: { method?: string; headers?: Record<string, string>; body?: string } = {},
      ) => {
        const response = await oneShot(`${server.url}${path}`, init);
        answers.push(`${response.status} ${JSON.stringify(response.headers)} ${response.text}`);
        return response.status;
      };
      for (const secret of secrets) {
        for (const authorization of [
          `Bearer ${secret}`,
          `bearer   ${secret}`,
          `Basic ${secret}`,
          secret,
          `Bearer ${secret} extra`,
        ]) {
          const headers = { authorization };
          await send('/plants', { headers });
          await send('/plants?limit=abc', { headers });
          await send('/plants', {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: '{"id": 1, "name": "a"}',
          });
          await send('/plants', {
            method: 'POST',
            headers: { ...headers, 'content-type': 'application/json' },
            body: '{"id": "x"',
          });
          await send('/plants', { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body: 'x' });
          await send('/plants', { method: 'DELETE', headers });
          await send('/nowhere', { headers });
        }
        // A client that puts its token in the URL (RFC 6750's access_token) or the wrong header.
        await send(`/plants?access_token=${secret}`);
        await send(`/plants?limit=1&token=${encodeURIComponent(secret)}`);
        await send('/plants', { headers: { 'x-api-key': secret, cookie: `token=${secret}` } });
        // Requests the HTTP parser rejects, with the token in them: nothing of them is logged.
        const raw = await rawExchange(
          port,
          `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nBad Header: y\r\n\r\n`,
          {
            untilResponse: true,
          },
        );
        answers.push(raw.raw.toString('latin1'));
        const tooBig = await rawExchange(
          port,
          `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
          {
            untilResponse: true,
          },
        );
        answers.push(tooBig.raw.toString('latin1'));
      }
      assert.equal(
        await send('/plants', { headers: { authorization: `Bearer ${valid.token}` } }),
        200,
        'the valid token works',
      );
      assert.equal(
        await send('/plants', { headers: { authorization: `Bearer ${revoked.token}` } }),
        401,
        'the revoked token does not',
      );
      assert.equal(
        await send('/plants', { headers: { authorization: `Bearer ${expired.token}` } }),
        401,
        'the expired token does not',
      );

      assert.equal(await server.stop('SIGTERM'), 0);
      const logs = server.output();
      assert.ok(
        logs.split('\n').filter((line) => line.includes('"msg":"request"')).length > 100,
        'requests were logged',
      );
      const list = runCli(['token', 'list', '--database', database]);
      const listJson = runCli(['token', 'list', '--json', '--database', database]);
      for (const secret of secrets) {
        assert.ok(
          !logs.includes(secret),
          `a token secret is in the server's output:\n${logs.split('\n').find((l) => l.includes(secret))}`,
        );
        const echoed = answers.find((a) => a.includes(secret));
        assert.equal(echoed, undefined, 'a token secret is in a response (headers or error message)');
        assert.ok(!list.stdout.includes(secret) && !listJson.stdout.includes(secret), '`token list` shows no secret');
        assert.ok(!logs.includes(hashSecret(secret)) && !list.stdout.includes(hashSecret(secret)), 'nor its hash');
      }
    });
  });

  describe(`the store keeps only a hash of each token, and a token is found by that hash (${engine.name})`, () => {
    it('no secret is anywhere in the store; the SHA-256 of each is; a token stored only as a hash authenticates', async (t) => {
      const { database, server } = await serverOnFreshStore(engine, t);
      const first = server.firstToken!;
      assert.ok(first, 'the first start created a token');
      const issued = [
        await createToken(database, 'hash-a'),
        await createToken(database, 'hash-b', ['--scopes', 'plants:read']),
      ];

      // A token put into the store by hash alone: the server never saw the secret, yet accepts it.
      const secret = randomApiToken();
      const storage = await openStorage(database);
      try {
        await storage.createToken({
          id: 'tok_by_hash_only',
          account: 'hash-c',
          secretHash: createHash('sha256').update(secret).digest('base64url'),
          scopes: ['plants:read', 'plants:write'],
          createdAt: new Date(),
          expiresAt: null,
        });
      } finally {
        await storage.close();
      }
      const ok = await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${secret}` } });
      assert.equal(ok.status, 200, 'the secret whose hash is stored is accepted');
      const flipped = secret.slice(0, -1) + (secret.endsWith('A') ? 'B' : 'A');
      const near = await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${flipped}` } });
      assert.equal(near.status, 401, 'a secret one character off is not');

      const stored = await everythingStored(engine, database);
      for (const token of [...issued.map((i) => i.token), first, secret]) {
        const body = token.slice('pst_'.length);
        assert.ok(!stored.includes(body), 'no secret (not even without its prefix) is in the store');
        const hash = createHash('sha256').update(token).digest();
        assert.ok(
          stored.includes(hash.toString('base64url')) || stored.includes(hash.toString('hex')),
          'the SHA-256 of the secret is what the store keeps',
        );
      }
    });
  });

  describe(`JSON answers carry the OWASP REST headers and no others of the kind; the /docs page Helmet's (${engine.name})`, () => {
    it('on 2xx, 400, 401, 403, 404, 405, 409, 413, 415 from the app, the ops endpoints and the raw 400 and 431 answers', async (t) => {
      const { database, server } = await serverOnFreshStore(engine, t);
      const token = server.firstToken!;
      const readOnly = (await createToken(database, 'headers', ['--scopes', 'plants:read'])).token;
      const auth = { authorization: `Bearer ${token}` };
      const json = { ...auth, 'content-type': 'application/json' };
      const port = Number(new URL(server.url).port);

      const cases: Array<[string, number, string, RequestInit?]> = [
        ['list', 200, '/plants', { headers: auth }],
        ['page', 200, '/plants?limit=1', { headers: auth }],
        ['create', 200, '/plants', { method: 'POST', headers: json, body: '{"id":1,"name":"a"}' }],
        ['conflict', 409, '/plants', { method: 'POST', headers: json, body: '{"id":1,"name":"b"}' }],
        ['HEAD', 200, '/plants', { method: 'HEAD', headers: auth }],
        ['health', 200, '/healthz'],
        ['ready', 200, '/readyz'],
        ['metrics', 200, '/metrics'],
        ['OpenAPI JSON', 200, '/openapi.json'],
        ['OpenAPI YAML', 200, '/openapi.yaml'],
        ['docs document', 200, '/docs/json'],
        ['bad JSON', 400, '/plants', { method: 'POST', headers: json, body: '{' }],
        ['bad limit', 400, '/plants?limit=-1', { headers: auth }],
        ['bad URL', 400, '/%zz', { headers: auth }],
        ['no token', 401, '/plants'],
        ['unknown token', 401, '/plants', { headers: { authorization: `Bearer ${randomApiToken()}` } }],
        [
          'missing scope',
          403,
          '/plants',
          {
            method: 'POST',
            headers: { authorization: `Bearer ${readOnly}`, 'content-type': 'application/json' },
            body: '{"id":2,"name":"a"}',
          },
        ],
        ['unknown path', 404, '/nowhere'],
        ['wrong method', 405, '/plants', { method: 'DELETE', headers: auth }],
        [
          'too large',
          413,
          '/plants',
          { method: 'POST', headers: json, body: `{"id":3,"name":"${'x'.repeat(17_000)}"}` },
        ],
        ['not JSON', 415, '/plants', { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: 'x' }],
      ];
      for (const [what, status, path, init] of cases) {
        const response = await fetch(`${server.url}${path}`, init);
        await response.arrayBuffer();
        assert.equal(response.status, status, what);
        assertApiHeaders((name) => response.headers.get(name), `${what} (${status})`);
      }

      const raw: Array<[string, number, string]> = [
        ['malformed header', 400, 'GET /plants HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'],
        ['unknown method', 400, 'BREW /plants HTTP/1.1\r\nHost: x\r\n\r\n'],
        ['CONNECT', 400, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'],
        ['no Host', 400, 'GET /plants HTTP/1.1\r\nConnection: close\r\n\r\n'],
        ['headers too large', 431, `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
      ];
      for (const [what, status, bytes] of raw) {
        const { responses } = await rawExchange(port, bytes, { untilResponse: true });
        assert.equal(responses[0]?.status, status, what);
        assertApiHeaders((name) => responses[0]!.headers[name], `${what} (${status})`);
      }
    });

    it("the /docs page, its redirect and its assets carry Helmet's browser set instead, without HSTS", async (t) => {
      const { server } = await serverOnFreshStore(engine, t);
      const pages: Array<[string, number, string]> = [
        ['docs page', 200, '/docs'],
        ['docs page with slash', 200, '/docs/'],
        ['docs redirect', 302, '/docs/static/index.html'],
        ['docs initializer', 200, '/docs/static/swagger-initializer.js'],
        ['docs asset', 200, '/docs/static/swagger-ui.css'],
      ];
      for (const [what, status, path] of pages) {
        const response = await fetch(`${server.url}${path}`, { redirect: 'manual' });
        await response.arrayBuffer();
        assert.equal(response.status, status, what);
        for (const name of PAGE_ONLY_HEADERS) assert.ok(response.headers.has(name), `${what} has ${name}`);
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff', what);
        assert.equal(response.headers.get('x-frame-options'), 'SAMEORIGIN', what);
        assert.match(response.headers.get('content-security-policy') ?? '', /script-src 'self'/, what);
        assert.equal(response.headers.get('strict-transport-security'), null, `${what}: HSTS is the TLS terminator's`);
        assert.notEqual(response.headers.get('cache-control'), 'no-store', `${what}: a page may be cached`);
      }
    });

    it('on 429 too', async () => {
      const app = await testApp(engine, { rateLimit: 1 });
      try {
        const token = await app.token('limited');
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++) {
          const response = await app.app.inject({ url: '/plants', headers: { authorization: `Bearer ${token}` } });
          statuses.push(response.statusCode);
          if (response.statusCode === 429) {
            assertApiHeaders((name) => response.headers[name] as string | undefined, '429');
          }
        }
        assert.ok(statuses.includes(429), `the limit was hit: ${statuses}`);
      } finally {
        await app.close();
      }
    });
  });
}
