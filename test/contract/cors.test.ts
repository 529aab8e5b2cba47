import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { call, postPlant } from '../helpers/http.js';
import { runCli } from '../helpers/server.js';
import { openFeed } from '../helpers/sse.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** The contract's "Browsers: CORS", one describe per rule. */

const APP = 'https://app.example.com';
const LOCAL = 'http://localhost:3000';
const STRANGER = 'https://evil.example.net';
const CORS_HEADERS = [
  'access-control-allow-origin',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'access-control-allow-credentials',
];

const preflight = (base: string, path: string, origin: string, method = 'POST', extra: Record<string, string> = {}) =>
  call(`${base}${path}`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, ...extra },
  });

describe('--cors-origins: a value that is not an origin is a bad setting', () => {
  for (const bad of [
    'https://app.example.com/',
    'https://app.example.com/path',
    'app.example.com',
    'ftp://x.example',
    '*,https://a.example',
  ]) {
    it(`refuses "${bad}" with exit status 2`, () => {
      const result = runCli(['serve', '--port', '0', '--database', 'sqlite::memory:', '--cors-origins', bad]);
      assert.equal(result.status, 2, result.stderr);
      assert.match(result.stderr, /cors-origins/);
    });
  }
});

for (const engine of ENGINES) {
  describe(`CORS off by default: no CORS headers at all (${engine.name})`, () => {
    const s = realServer(engine);
    it('answers an Origin without CORS headers, and OPTIONS as a method the path lacks', async () => {
      const reply = await call(`${s.url}/plants`, { token: s.token, headers: { origin: APP } });
      assert.equal(reply.status, 200);
      for (const name of CORS_HEADERS) assert.equal(reply.headers.get(name), null, name);
      const options = await preflight(s.url, '/plants', APP);
      assert.equal(options.status, 405);
      assert.ok(isErrorBody(options));
    });
  });

  describe(`CORS for the listed origins (${engine.name})`, () => {
    const s = realServer(engine, [
      '--cors-origins',
      `${APP},${LOCAL}`,
      '--rate-limit',
      '1',
      '--auth-failure-limit',
      '1',
    ]);

    it('an allowed origin gets Allow-Origin (itself), Vary: Origin and the exposed headers, never credentials', async () => {
      for (const origin of [APP, LOCAL]) {
        const reply = await postPlant(s.url, s.token, '{"id":1,"name":"cors"}').then(() =>
          call(`${s.url}/plants`, { token: s.token, headers: { origin } }),
        );
        assert.equal(reply.headers.get('access-control-allow-origin'), origin);
        assert.match(reply.headers.get('vary') ?? '', /Origin/);
        const exposed = (reply.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/,\s*/);
        for (const name of [
          'etag',
          'link',
          'location',
          'retry-after',
          'x-total-count',
          'preference-applied',
          'ratelimit-limit',
          'ratelimit-remaining',
          'ratelimit-reset',
        ]) {
          assert.ok(exposed.includes(name), `exposes ${name}`);
        }
        assert.equal(reply.headers.get('access-control-allow-credentials'), null);
        await new Promise((resolve) => setTimeout(resolve, 1_100)); // the rate limit of 1 per second
      }
    });

    it('errors carry the headers too, so the browser lets the page read them', async () => {
      const reply = await call(`${s.url}/plants`, { headers: { origin: APP } });
      assert.equal(reply.status, 401);
      assert.ok(isErrorBody(reply), reply.text);
      assert.equal(reply.headers.get('access-control-allow-origin'), APP);
      assert.match(reply.headers.get('vary') ?? '', /Origin/);
      assert.match(reply.headers.get('access-control-expose-headers') ?? '', /Retry-After/i);
    });

    it('an origin not on the list gets none of the headers, and the request is otherwise the same', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const reply = await call(`${s.url}/plants`, { token: s.token, headers: { origin: STRANGER } });
      assert.equal(reply.status, 200);
      for (const name of [...CORS_HEADERS, 'vary']) assert.equal(reply.headers.get(name), null, name);
      // The same answer as without an Origin: the account's plants, counted by the rate limit.
      assert.deepEqual(reply.json, [{ name: 'cors' }]);
      assert.equal(reply.headers.get('ratelimit-limit'), '1');
    });

    it("a preflight gets 204 with the path's methods, the allowed headers and Max-Age 600, without a token", async () => {
      const reply = await preflight(s.url, '/plants', APP, 'POST', {
        'access-control-request-headers': 'authorization, content-type',
      });
      assert.equal(reply.status, 204);
      assert.equal(reply.headers.get('access-control-allow-origin'), APP);
      assert.equal(reply.headers.get('access-control-allow-methods'), 'GET, HEAD, POST');
      const allowed = (reply.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
      for (const name of ['authorization', 'content-type', 'if-match', 'if-none-match', 'prefer', 'last-event-id']) {
        assert.ok(allowed.includes(name), `allows ${name}`);
      }
      assert.equal(reply.headers.get('access-control-max-age'), '600');
      assert.equal(reply.headers.get('access-control-allow-credentials'), null);
      const byId = await preflight(s.url, '/plants/5', APP, 'PATCH');
      assert.equal(byId.headers.get('access-control-allow-methods'), 'GET, HEAD, PATCH, DELETE');
      const events = await preflight(s.url, '/events', APP, 'GET');
      assert.equal(events.headers.get('access-control-allow-methods'), 'GET');
    });

    it('a preflight from another origin, or to an unknown path, is not answered as one', async () => {
      const stranger = await preflight(s.url, '/plants', STRANGER);
      assert.equal(stranger.status, 405);
      assert.ok(isErrorBody(stranger), stranger.text);
      for (const name of CORS_HEADERS) assert.equal(stranger.headers.get(name), null, name);
      const unknown = await preflight(s.url, '/nowhere', APP);
      assert.equal(unknown.status, 404);
      assert.ok(isErrorBody(unknown));
    });

    it('the change feed is readable from an allowed origin', async () => {
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const feed = await openFeed(s.url, { token: s.token, headers: { origin: APP } });
      feed.close();
      assert.equal(feed.status, 200);
      assert.equal(feed.headers.get('access-control-allow-origin'), APP);
    });
  });

  describe(`a preflight is not counted by the rate limit or the bad-credential limit (${engine.name})`, () => {
    // Both limits at 1, so that one counted preflight would use up either budget.
    const s = realServer(engine, ['--cors-origins', APP, '--rate-limit', '1', '--auth-failure-limit', '1']);

    it('leaves the account its whole second and the address its whole minute, without waiting', async () => {
      // With the account's token, with a bad one and with none: a preflight is never authenticated.
      for (const authorization of [`Bearer ${s.token}`, 'Bearer pst_not-a-token', undefined, undefined, undefined]) {
        const reply = await preflight(s.url, '/plants', APP, 'GET', authorization ? { authorization } : {});
        assert.equal(reply.status, 204);
        assert.equal(reply.headers.get('ratelimit-limit'), null, 'a counted answer carries RateLimit-*');
      }
      // At once, in the same second and minute as the preflights: the account's first counted
      // request and the address's first failure.
      const first = await call(`${s.url}/plants`, { token: s.token });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers.get('ratelimit-remaining'), '0');
      const failure = await call(`${s.url}/plants`, { token: 'pst_not-a-token' });
      assert.equal(failure.status, 401, failure.text);
      // Both limits are on and counting: the next of each is refused.
      assert.equal((await call(`${s.url}/plants`, { token: s.token })).status, 429);
      const second = await call(`${s.url}/plants`, { token: 'pst_not-a-token' });
      assert.equal(second.status, 429);
      assert.match((second.json as { message: string }).message, /failed authentications/);
    });
  });

  describe(`CORS for every origin: * (${engine.name})`, () => {
    const s = realServer(engine, ['--cors-origins', '*']);
    it('answers Allow-Origin: * with Vary: Origin, and preflights', async () => {
      const reply = await call(`${s.url}/plants`, { token: s.token, headers: { origin: STRANGER } });
      assert.equal(reply.headers.get('access-control-allow-origin'), '*');
      assert.match(reply.headers.get('vary') ?? '', /Origin/);
      const preflighted = await preflight(s.url, '/plants', STRANGER);
      assert.equal(preflighted.status, 204);
      assert.equal(preflighted.headers.get('access-control-allow-origin'), '*');
      assert.equal(preflighted.headers.get('access-control-allow-methods'), 'GET, HEAD, POST');
    });
  });
}
