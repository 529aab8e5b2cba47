import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type JWK, type JWTHeaderParameters } from 'jose';
import { pg, sqlite } from '../helpers/engines.js';
import { call, listPlants, postPlant, type Reply } from '../helpers/http.js';
import { CLI, startServer, type CliResult, type CreatedToken, type RunningServer } from '../helpers/server.js';

/**
 * JWT bearer tokens against the real server over real HTTP, with a local JWKS server standing in
 * for the identity provider.
 */

const AUDIENCE = 'plant-store';
const ISSUER = 'https://idp.example';
const COOLDOWN_MS = 1_000; // the server refetches the JWKS for unknown key ids at most this often

// ---------------------------------------------------------------------------------------------
// Keys and tokens

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

interface SigningKey extends KeyPair {
  alg: string;
  kid: string;
  /** The public key as published in the JWKS. */
  jwk: JWK;
}

async function signingKey(alg: string): Promise<SigningKey> {
  const kid = `${alg}-${randomUUID()}`;
  const pair = await generateKeyPair(alg);
  const jwk = { ...(await exportJWK(pair.publicKey)), kid, alg, use: 'sig' };
  return { ...pair, alg, kid, jwk };
}

const now = () => Math.floor(Date.now() / 1000);

/** Claims of a good token; a claim set to `undefined` is left out. */
function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const all: Record<string, unknown> = {
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    scope: 'plants:read plants:write',
    iat: now(),
    exp: now() + 300,
    ...overrides,
  };
  return Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined));
}

function jwt(
  key: SigningKey,
  overrides: Record<string, unknown> = {},
  header: Partial<JWTHeaderParameters> = {},
): Promise<string> {
  return new SignJWT(claims(overrides))
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT', ...header })
    .sign(key.privateKey);
}

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An unsecured JWT (`alg: none`, empty signature). */
function unsigned(header: object, payload: object): string {
  return `${base64url({ alg: 'none', typ: 'JWT', ...header })}.${base64url(payload)}.`;
}

/** An HS256 JWT whose HMAC secret is the given bytes (the algorithm-confusion attack). */
function hmacSigned(secret: string, payload: object, header: object = {}): Promise<string> {
  return new SignJWT({ ...payload })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', ...header })
    .sign(new TextEncoder().encode(secret));
}

// ---------------------------------------------------------------------------------------------
// The identity provider's JWKS endpoint

class JwksServer {
  keys: JWK[];
  /** How many times the JWKS was fetched. */
  fetches = 0;
  /** Delay before each answer, to widen races. */
  delayMs = 0;
  /** While true, every connection is cut without an answer. */
  down = false;
  url = '';
  private readonly server: Server;

  constructor(keys: SigningKey[]) {
    this.keys = keys.map((k) => k.jwk);
    this.server = createServer((request, response) => {
      if (this.down) {
        request.socket.destroy();
        return;
      }
      this.fetches++;
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: this.keys }));
      }, this.delayMs);
    });
  }

  publish(...keys: SigningKey[]) {
    this.keys = keys.map((k) => k.jwk);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/.well-known/jwks.json`;
    return this;
  }

  async stop() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

// ---------------------------------------------------------------------------------------------
// The servers under test, and the CLI (run asynchronously, so set-up can start them side by side)

async function cli(args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], { timeout: 30_000 });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { status: failed.code ?? null, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

async function apiToken(database: string, name: string): Promise<string> {
  const result = await cli(['token', 'create', '--account', name, '--json', '--database', database]);
  assert.equal(result.status, 0, result.stderr);
  return (JSON.parse(result.stdout) as CreatedToken).token;
}

interface Fixture {
  server: RunningServer;
  url: string;
  database: string;
  close(): Promise<void>;
}

async function plantStore(args: string[]): Promise<Fixture> {
  const { url: database, drop } = await sqlite.fresh();
  const server = await startServer({ database, args });
  return {
    server,
    url: server.url,
    database,
    async close() {
      await server.stop();
      await drop();
    },
  };
}

const jwksArgs = (jwks: JwksServer, extra: string[] = []) => [
  '--jwt-jwks-url',
  jwks.url,
  '--jwt-audience',
  AUDIENCE,
  '--jwt-issuer',
  ISSUER,
  ...extra,
];

const afterCooldown = () => sleep(COOLDOWN_MS + 150);

let nextId = 1;
/** A fresh account name per test, so tests never see each other's plants. */
const account = (prefix = 'acct') => `${prefix}-${randomUUID().slice(0, 8)}`;

// ---------------------------------------------------------------------------------------------
// Assertions

function assertErrorBody(reply: Reply, status: number) {
  assert.equal(reply.status, status, `expected ${status}, got ${reply.status}: ${reply.text}`);
  assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(reply.json as object).sort(), ['error', 'message']);
  const body = reply.json as { error: unknown; message: unknown };
  assert.equal(body.error, status);
  assert.equal(typeof body.message, 'string');
  assert.notEqual(body.message, '');
}

function assertInvalidToken(reply: Reply) {
  assertErrorBody(reply, 401);
  assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store", error="invalid_token"/);
}

function assertInsufficientScope(reply: Reply, scope: string) {
  assertErrorBody(reply, 403);
  const challenge = reply.headers.get('www-authenticate') ?? '';
  assert.match(challenge, /^Bearer realm="plant-store", error="insufficient_scope"/);
  assert.ok(challenge.includes(`scope="${scope}"`), challenge);
}

function assertUnavailable(reply: Reply) {
  assertErrorBody(reply, 503);
  assert.match(reply.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
}

/** The token works: listing (its own, empty account) answers 200. */
async function assertAccepted(base: string, token: string) {
  const reply = await listPlants(base, token);
  assert.equal(reply.status, 200, reply.text);
  assert.ok(Array.isArray(reply.json));
}

/** The token is refused on both operations with 401 invalid_token. */
async function assertRejected(base: string, token: string) {
  assertInvalidToken(await listPlants(base, token));
  assertInvalidToken(await postPlant(base, token, { id: nextId++, name: 'Fern' }));
}

// ---------------------------------------------------------------------------------------------
// Set-up: every provider and server at once (starting a server takes a second or two).

let rsa: SigningKey;
let ec: SigningKey;
let ps: SigningKey;
let ed: SigningKey;
/** The provider behind `main`, publishing one key of each kind. */
let provider: JwksServer;
/** Most rules run here: --jwt-jwks-url, --jwt-audience, --jwt-issuer. */
let main: Fixture;
let base: string;
/** Key rotation: its own provider, so the test controls what the server has cached. */
let rotating: { idp: JwksServer; store: Fixture; first: SigningKey };
/** A provider that goes down after the server has fetched its keys once. */
let failing: { idp: JwksServer; store: Fixture; known: SigningKey };
/** Nothing listens at this server's JWKS URL. */
let orphan: Fixture;
const CLAIM = 'https://plant-store.example/account';
/** --jwt-account-claim CLAIM. */
let claimed: Fixture;
/** --jwt-public-key, with the key it names. */
let pem: { store: Fixture; key: SigningKey };
let tmp: string;

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'plant-store-jwt-'));
  const [r, e, p, d, first, known, pemKey] = await Promise.all([
    signingKey('RS256'),
    signingKey('ES256'),
    signingKey('PS256'),
    signingKey('EdDSA'),
    signingKey('RS256'),
    signingKey('ES256'),
    signingKey('RS256'),
  ]);
  [rsa, ec, ps, ed] = [r, e, p, d];
  const pemFile = join(tmp, 'idp.pem');
  writeFileSync(pemFile, await exportSPKI(pemKey.publicKey));

  const [idp, rotatingIdp, failingIdp, deadIdp] = await Promise.all([
    new JwksServer([rsa, ec, ps, ed]).start(),
    new JwksServer([first]).start(),
    new JwksServer([known]).start(),
    new JwksServer([]).start(),
  ]);
  provider = idp;
  await deadIdp.stop(); // its port now refuses connections

  const stores = await Promise.allSettled([
    plantStore(jwksArgs(provider)),
    plantStore(jwksArgs(rotatingIdp)),
    plantStore(jwksArgs(failingIdp)),
    plantStore(jwksArgs(deadIdp)),
    plantStore(jwksArgs(provider, ['--jwt-account-claim', CLAIM])),
    plantStore(['--jwt-public-key', pemFile, '--jwt-audience', AUDIENCE, '--jwt-issuer', ISSUER]),
  ]);
  const started = stores.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
  [main, rotating, failing, orphan, claimed, pem] = [
    started[0]!,
    { idp: rotatingIdp, store: started[1]!, first },
    { idp: failingIdp, store: started[2]!, known },
    started[3]!,
    started[4]!,
    { store: started[5]!, key: pemKey },
  ];
  const failed = stores.find((s) => s.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  base = main.url;
});

after(async () => {
  await Promise.all(
    [main, rotating?.store, failing?.store, orphan, claimed, pem?.store].map((store) => store?.close()),
  );
  await Promise.all([provider, rotating?.idp, failing?.idp].map((idp) => idp?.stop()));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// The rules

describe('a valid JWT reaches the account named by its sub claim', () => {
  for (const alg of ['RS256', 'ES256', 'PS256', 'EdDSA']) {
    it(`${alg}: create, then list sees the plant`, async () => {
      const key = { RS256: rsa, ES256: ec, PS256: ps, EdDSA: ed }[alg]!;
      const token = await jwt(key, { sub: account() });
      const created = await postPlant(base, token, { id: nextId++, name: 'Monstera', tag: alg });
      assert.equal(created.status, 200, created.text);
      assert.deepEqual(created.json, { name: 'Monstera', tag: alg });
      const listed = await listPlants(base, token);
      assert.equal(listed.status, 200, listed.text);
      assert.deepEqual(listed.json, [{ name: 'Monstera', tag: alg }]);
    });
  }

  it('an audience array that contains ours is accepted', async () => {
    await assertAccepted(base, await jwt(rsa, { sub: account(), aud: ['other-api', AUDIENCE] }));
  });

  it('the Bearer scheme word is matched case-insensitively', async () => {
    const token = await jwt(rsa, { sub: account() });
    const reply = await call(`${base}/plants`, { headers: { authorization: `bEaReR ${token}` } });
    assert.equal(reply.status, 200, reply.text);
  });

  it('another sub is another account: it does not see the plant', async () => {
    const owner = await jwt(rsa, { sub: account() });
    assert.equal((await postPlant(base, owner, { id: nextId++, name: 'Aloe' })).status, 200);
    assert.deepEqual((await listPlants(base, await jwt(rsa, { sub: account() }))).json, []);
  });
});

describe('an expired JWT is refused beyond the 30 s clock tolerance', () => {
  it('exp 60 s ago -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), iat: now() - 600, exp: now() - 60 }));
  });

  it('exp 10 s ago (within the tolerance) -> accepted', async () => {
    await assertAccepted(base, await jwt(rsa, { sub: account(), iat: now() - 600, exp: now() - 10 }));
  });

  it('no exp claim at all -> accepted (exp is checked when present; identity providers always set it)', async () => {
    await assertAccepted(base, await jwt(rsa, { sub: account(), exp: undefined }));
  });
});

describe('a JWT that is not yet valid (nbf) is refused beyond the 30 s clock tolerance', () => {
  it('nbf 60 s ahead -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), nbf: now() + 60 }));
  });

  it('nbf 10 s ahead (within the tolerance) -> accepted', async () => {
    await assertAccepted(base, await jwt(rsa, { sub: account(), nbf: now() + 10 }));
  });
});

describe('a JWT from another issuer is refused', () => {
  it('wrong iss -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), iss: 'https://evil.example' }));
  });

  it('no iss -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), iss: undefined }));
  });
});

describe('a JWT for another audience is refused', () => {
  it('wrong aud -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), aud: 'other-api' }));
  });

  it('an aud array without ours -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), aud: ['other-api', 'plant-store-admin'] }));
  });
});

describe('a JWT without an audience is refused', () => {
  it('no aud -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: account(), aud: undefined }));
  });
});

describe('a JWT signed by a key the provider does not publish is refused', () => {
  it('signed by a stranger key under a published kid -> 401 invalid_token', async () => {
    const impostor = { ...(await signingKey('ES256')), kid: ec.kid };
    await assertRejected(base, await jwt(impostor, { sub: account() }));
  });

  it('a payload swapped under a valid signature -> 401 invalid_token', async () => {
    const [header, , signature] = (await jwt(ec, { sub: account() })).split('.');
    await assertRejected(base, `${header}.${base64url(claims({ sub: account() }))}.${signature}`);
  });
});

describe('an unsigned JWT (alg: none) is refused', () => {
  it('alg none under a published kid -> 401 invalid_token', async () => {
    await assertRejected(base, unsigned({ kid: rsa.kid }, claims({ sub: account() })));
  });

  it('alg none without kid -> 401 invalid_token', async () => {
    await assertRejected(base, unsigned({}, claims({ sub: account() })));
  });
});

describe('an HS256 JWT keyed with the public key is refused (algorithm confusion)', () => {
  it('HMAC secret = the public key as PEM -> 401 invalid_token', async () => {
    const publicPem = await exportSPKI(rsa.publicKey);
    await assertRejected(base, await hmacSigned(publicPem, claims({ sub: account() }), { kid: rsa.kid }));
  });

  it('HMAC secret = the public key as JWK JSON -> 401 invalid_token', async () => {
    await assertRejected(base, await hmacSigned(JSON.stringify(rsa.jwk), claims({ sub: account() }), { kid: rsa.kid }));
  });
});

describe('scopes come from the scope or scp claim; a missing scope is 403 insufficient_scope', () => {
  it('scope "plants:read": list 200, create 403', async () => {
    const token = await jwt(rsa, { sub: account(), scope: 'plants:read' });
    await assertAccepted(base, token);
    assertInsufficientScope(await postPlant(base, token, { id: nextId++, name: 'Fern' }), 'plants:write');
  });

  it('scope "openid plants:write": create 200, list 403', async () => {
    const token = await jwt(rsa, { sub: account(), scope: 'openid plants:write' });
    assert.equal((await postPlant(base, token, { id: nextId++, name: 'Fern' })).status, 200);
    assertInsufficientScope(await listPlants(base, token), 'plants:read');
  });

  it('scp ["plants:read"]: list 200, create 403', async () => {
    const token = await jwt(rsa, { sub: account(), scope: undefined, scp: ['plants:read'] });
    await assertAccepted(base, token);
    assertInsufficientScope(await postPlant(base, token, { id: nextId++, name: 'Fern' }), 'plants:write');
  });

  it('scp ["plants:read", "plants:write"]: create and list', async () => {
    const token = await jwt(rsa, { sub: account(), scope: undefined, scp: ['plants:read', 'plants:write'] });
    assert.equal((await postPlant(base, token, { id: nextId++, name: 'Fern' })).status, 200);
    assert.equal((await listPlants(base, token)).status, 200);
  });

  it('scp "plants:read plants:write" (a string): create and list', async () => {
    const token = await jwt(rsa, { sub: account(), scope: undefined, scp: 'plants:read plants:write' });
    assert.equal((await postPlant(base, token, { id: nextId++, name: 'Fern' })).status, 200);
    assert.equal((await listPlants(base, token)).status, 200);
  });

  it('neither scope nor scp: 403 on both operations', async () => {
    const token = await jwt(rsa, { sub: account(), scope: undefined });
    assertInsufficientScope(await listPlants(base, token), 'plants:read');
    assertInsufficientScope(await postPlant(base, token, { id: nextId++, name: 'Fern' }), 'plants:write');
  });

  it('scope names are exact: "plants", "plants:read:all", "PLANTS:READ" grant nothing', async () => {
    const token = await jwt(rsa, { sub: account(), scope: 'plants plants:read:all PLANTS:READ' });
    assertInsufficientScope(await listPlants(base, token), 'plants:read');
  });
});

describe('a JWT without the account claim is refused', () => {
  it('no sub -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: undefined }));
  });

  it('an empty sub -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: '' }));
  });

  it('a sub that is not a string -> 401 invalid_token', async () => {
    await assertRejected(base, await jwt(rsa, { sub: 42 }));
  });
});

describe('--jwt-account-claim names the claim that holds the account', () => {
  it('plants go to the account in that claim, shared by users and API tokens; sub names none', async () => {
    const team = account('team');
    const token = await jwt(rsa, { sub: 'user-1', [CLAIM]: team });
    assert.equal((await postPlant(claimed.url, token, { id: 1, name: 'Ivy' })).status, 200);
    const colleague = await jwt(rsa, { sub: 'user-2', [CLAIM]: team });
    assert.deepEqual((await listPlants(claimed.url, colleague)).json, [{ name: 'Ivy' }]);
    const [teamToken, userToken] = await Promise.all([
      apiToken(claimed.database, team),
      apiToken(claimed.database, 'user-1'),
    ]);
    assert.deepEqual((await listPlants(claimed.url, teamToken)).json, [{ name: 'Ivy' }]);
    assert.deepEqual((await listPlants(claimed.url, userToken)).json, []);
  });

  it('a token with sub but without that claim -> 401 invalid_token', async () => {
    await assertRejected(claimed.url, await jwt(rsa, { sub: account() }));
  });
});

describe('a JWT and an API token for the same account reach the same plants', () => {
  it('create with one, list with the other, both ways', async () => {
    const name = account('shared');
    const secret = await apiToken(main.database, name);
    const token = await jwt(ec, { sub: name });

    assert.equal((await postPlant(base, token, { id: 1, name: 'From JWT' })).status, 200);
    assert.equal((await postPlant(base, secret, { id: 2, name: 'From API token' })).status, 200);
    const expected = [{ name: 'From JWT' }, { name: 'From API token' }];
    assert.deepEqual((await listPlants(base, secret)).json, expected);
    assert.deepEqual((await listPlants(base, token)).json, expected);

    // The same id from the other kind of token is the same plant: a safe retry, or a 409.
    assert.equal((await postPlant(base, secret, { id: 1, name: 'From JWT' })).status, 200);
    assertErrorBody(await postPlant(base, secret, { id: 1, name: 'Changed' }), 409);
  });

  it('an unknown API token is still 401 invalid_token with JWTs on', async () => {
    assertInvalidToken(await listPlants(base, 'pst_not-a-real-token'));
  });
});

describe('a bearer token that is not a well-formed JWT gets 401 invalid_token', () => {
  for (const [label, token] of [
    ['random text', 'hello'],
    ['two segments', 'abc.def'],
    ['JWT-shaped garbage', 'abc.def.ghi'],
    ['a header that is not JSON', `${Buffer.from('nope').toString('base64url')}.e30.abc`],
  ] as const) {
    it(label, async () => assertInvalidToken(await listPlants(base, token)));
  }

  it('no Authorization header -> 401 with the bare Bearer challenge', async () => {
    const reply = await call(`${base}/plants`);
    assertErrorBody(reply, 401);
    assert.equal(reply.headers.get('www-authenticate'), 'Bearer realm="plant-store"');
  });
});

// The next three depend on what a server has cached and when it last fetched: their steps run in
// order, on servers no other rule uses.

describe('an unknown kid makes the server refetch the JWKS, so a rotated key works at once', () => {
  let url: string;

  before(async () => {
    url = rotating.store.url;
    await assertAccepted(url, await jwt(rotating.first, { sub: account() }));
  });

  it('a newly published kid is accepted on its first request, with one refetch', async () => {
    const second = await signingKey('ES256');
    rotating.idp.publish(rotating.first, second);
    const fetches = rotating.idp.fetches;
    await assertAccepted(url, await jwt(second, { sub: account() }));
    assert.equal(rotating.idp.fetches, fetches + 1);
    // The old key is still published: its tokens still work, without another fetch.
    await assertAccepted(url, await jwt(rotating.first, { sub: account() }));
    assert.equal(rotating.idp.fetches, fetches + 1);
  });

  it('concurrent requests with a new kid share one refetch and are all accepted', async () => {
    const third = await signingKey('ES256');
    await afterCooldown();
    rotating.idp.publish(rotating.first, third);
    rotating.idp.delayMs = 300;
    const fetches = rotating.idp.fetches;
    try {
      const token = await jwt(third, { sub: account() });
      const replies = await Promise.all(Array.from({ length: 5 }, () => listPlants(url, token)));
      assert.deepEqual(
        replies.map((r) => r.status),
        [200, 200, 200, 200, 200],
        replies.map((r) => r.text).join('\n'),
      );
      assert.equal(rotating.idp.fetches, fetches + 1);
    } finally {
      rotating.idp.delayMs = 0;
    }
  });

  it('kids the provider does not publish -> 401; a burst of them causes one refetch', async () => {
    const stranger = await signingKey('ES256');
    const tokens = await Promise.all(
      Array.from({ length: 11 }, () => jwt(stranger, { sub: account() }, { kid: randomUUID() })),
    );
    await afterCooldown();
    const fetches = rotating.idp.fetches;
    const replies = await Promise.all(tokens.slice(0, 10).map((token) => listPlants(url, token)));
    replies.forEach(assertInvalidToken);
    assert.equal(rotating.idp.fetches, fetches + 1);
    // One more right after, inside the cooldown: refused without a fetch.
    assertInvalidToken(await listPlants(url, tokens[10]!));
    assert.equal(rotating.idp.fetches, fetches + 1);
  });

  it('after the cooldown, a key published since the last refetch is accepted', async () => {
    const fourth = await signingKey('ES256');
    rotating.idp.publish(rotating.first, fourth);
    await afterCooldown();
    await assertAccepted(url, await jwt(fourth, { sub: account() }));
  });

  it('a key the provider retired is refused once the JWKS has been refetched', async () => {
    const fifth = await signingKey('ES256');
    rotating.idp.publish(fifth);
    await afterCooldown();
    await assertAccepted(url, await jwt(fifth, { sub: account() }));
    await assertRejected(url, await jwt(rotating.first, { sub: account() }));
  });
});

/** The `failing` server has fetched its provider's keys; then the provider stops answering. */
async function providerGoesDown() {
  failing.idp.down = false;
  await assertAccepted(failing.store.url, await jwt(failing.known, { sub: account() }));
  failing.idp.down = true;
}

describe('an unknown kid while the JWKS cannot be reached -> 503 with Retry-After', () => {
  before(providerGoesDown);

  it('503 with Retry-After and the Error body, for this request and the next ones', async () => {
    const unknown = await signingKey('ES256');
    for (let i = 0; i < 3; i++) {
      const token = await jwt(unknown, { sub: account() });
      assertUnavailable(await postPlant(failing.store.url, token, { id: 1, name: 'Fern' }));
    }
  });

  it('a server that never reached its provider: 503, not 401, every time', async () => {
    for (let i = 0; i < 2; i++) {
      assertUnavailable(await listPlants(orphan.url, await jwt(failing.known, { sub: account() })));
    }
  });
});

describe(
  "a JWT's wait on a slow identity provider spends none of the request's --database-timeout",
  { skip: pg.skip },
  () => {
    // The provider answers after 1.5 s (within the JWKS fetch's own 3 s), the database's timeout is 1 s.
    const PROVIDER_DELAY_MS = 1_500;
    let idp: JwksServer;
    let key: SigningKey;
    let server: RunningServer;
    let drop = async () => {};

    before(async () => {
      key = await signingKey('ES256');
      idp = await new JwksServer([key]).start();
      const fresh = await pg.fresh();
      drop = fresh.drop;
      server = await startServer({ database: fresh.url, args: [...jwksArgs(idp), '--database-timeout', '1s'] });
    });

    after(async () => {
      await server?.stop();
      await idp?.stop();
      await drop();
    });

    it('a create whose token waits 1.5 s for the keys is stored and answered 200', async () => {
      idp.delayMs = PROVIDER_DELAY_MS;
      const started = performance.now();
      const created = await postPlant(server.url, await jwt(key, { sub: account() }), { id: 1, name: 'Fern' });
      const ms = performance.now() - started;
      assert.ok(ms >= PROVIDER_DELAY_MS, `the request waited for the keys (answered after ${ms.toFixed(0)} ms)`);
      assert.equal(created.status, 200, `answered ${created.status} after ${ms.toFixed(0)} ms: ${created.text}`);
    });
  },
);

describe('a known key keeps working while the JWKS server is down', () => {
  before(providerGoesDown);

  it('tokens signed by the cached key still create and list', async () => {
    const unknown = await signingKey('ES256');
    assertUnavailable(await listPlants(failing.store.url, await jwt(unknown, { sub: account() })));
    const token = await jwt(failing.known, { sub: account() });
    assert.equal((await postPlant(failing.store.url, token, { id: 7, name: 'Cactus' })).status, 200);
    assert.deepEqual((await listPlants(failing.store.url, token)).json, [{ name: 'Cactus' }]);
  });

  it('once the provider is back (after the cooldown), a newly published key is accepted', async () => {
    const rotated = await signingKey('ES256');
    failing.idp.publish(failing.known, rotated);
    failing.idp.down = false;
    await afterCooldown();
    await assertAccepted(failing.store.url, await jwt(rotated, { sub: account() }));
    await assertAccepted(failing.store.url, await jwt(failing.known, { sub: account() }));
  });
});

describe('--jwt-public-key verifies JWTs against a PEM file instead of a JWKS', () => {
  it('a token signed by that key, with or without kid, is accepted', async () => {
    const token = await jwt(pem.key, { sub: account() }, { kid: undefined });
    assert.equal((await postPlant(pem.store.url, token, { id: 1, name: 'Palm' })).status, 200);
    assert.deepEqual((await listPlants(pem.store.url, token)).json, [{ name: 'Palm' }]);
    await assertAccepted(pem.store.url, await jwt(pem.key, { sub: account() }));
  });

  it('a token signed by another key -> 401 invalid_token', async () => {
    await assertRejected(pem.store.url, await jwt(rsa, { sub: account() }));
  });

  it('HS256 keyed with the PEM text -> 401 invalid_token', async () => {
    const publicPem = await exportSPKI(pem.key.publicKey);
    await assertRejected(pem.store.url, await hmacSigned(publicPem, claims({ sub: account() })));
  });

  it('alg none -> 401 invalid_token', async () => {
    await assertRejected(pem.store.url, unsigned({}, claims({ sub: account() })));
  });

  it('audience, issuer and expiry are checked here too', async () => {
    await assertRejected(pem.store.url, await jwt(pem.key, { sub: account(), aud: 'other-api' }));
    await assertRejected(pem.store.url, await jwt(pem.key, { sub: account(), iss: 'https://evil.example' }));
    await assertRejected(pem.store.url, await jwt(pem.key, { sub: account(), exp: now() - 60 }));
  });
});

describe('JWT settings that cannot work are refused at start: exit 2, a one-line reason', () => {
  const refused = async (args: string[], reason: RegExp) => {
    const database = `sqlite:${join(tmp, `${randomUUID()}.db`)}`;
    const result = await cli(['serve', '--port', '0', '--database', database, ...args]);
    assert.equal(result.status, 2, result.stderr);
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0]!, reason);
  };

  it('--jwt-jwks-url without --jwt-audience; --jwt-public-key without it; a PEM with no usable key', async () => {
    const emptyPem = join(tmp, 'empty.pem');
    writeFileSync(emptyPem, '-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n');
    const garbagePem = join(tmp, 'garbage.pem');
    writeFileSync(garbagePem, '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n');
    await Promise.all([
      refused(['--jwt-jwks-url', 'http://127.0.0.1:9/jwks.json'], /audience/),
      refused(['--jwt-public-key', join(tmp, 'idp.pem')], /audience/),
      refused(['--jwt-public-key', emptyPem, '--jwt-audience', AUDIENCE], /jwt-public-key/),
      refused(['--jwt-public-key', garbagePem, '--jwt-audience', AUDIENCE], /jwt-public-key/),
    ]);
  });
});
