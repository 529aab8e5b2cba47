import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES_AND_POOLER } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { createToken, runCli } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

const REALM = 'Bearer realm="plant-store"';

for (const engine of ENGINES_AND_POOLER) {
  describe(`bearer tokens (${engine.name})`, { skip: engine.skip }, () => {
    const s = realServer(engine);

    describe('missing or malformed Authorization is 401 with the realm challenge', () => {
      const headers: Array<[string, Record<string, string>]> = [
        ['no header', {}],
        ['an empty header', { authorization: '' }],
        ['Basic credentials', { authorization: 'Basic dXNlcjpwYXNz' }],
        ['Bearer without a token', { authorization: 'Bearer ' }],
        ['a token without the scheme', { authorization: 'pst_abc' }],
      ];
      for (const [what, header] of headers) {
        for (const method of ['GET', 'POST']) {
          it(`${method} with ${what}`, async () => {
            const reply = await call(`${s.url}/plants`, {
              method,
              headers: { ...header, 'content-type': 'application/json' },
              ...(method === 'POST' ? { body: '{"id":1,"name":"a"}' } : {}),
            });
            assert.equal(reply.status, 401);
            assert.ok(isErrorBody(reply));
            assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store"/);
          });
        }
      }
    });

    describe('unknown, revoked or expired tokens are 401 invalid_token', () => {
      it('refuses an unknown token', async () => {
        const reply = await listPlants(s.url, 'pst_' + 'x'.repeat(43));
        assert.equal(reply.status, 401);
        assert.ok(isErrorBody(reply));
        assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
        assert.ok(reply.headers.get('www-authenticate')!.startsWith(REALM));
      });
      it('refuses a token of another shape', async () => {
        const reply = await listPlants(s.url, 'hello-world');
        assert.equal(reply.status, 401);
        assert.ok(isErrorBody(reply), reply.text);
        assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      });
      it('refuses a revoked token within 1 second, while the server runs', async () => {
        const created = await createToken(s.database, `revoked-${engine.name}`);
        assert.equal((await listPlants(s.url, created.token)).status, 200);
        const revoke = runCli(['token', 'revoke', created.id, '--database', s.database]);
        assert.equal(revoke.status, 0, revoke.stderr);
        const revokedAt = Date.now();
        let status = 200;
        while (status === 200 && Date.now() - revokedAt < 3_000) {
          status = (await listPlants(s.url, created.token)).status;
          if (status === 200) await sleep(50);
        }
        assert.equal(status, 401);
        assert.ok(Date.now() - revokedAt <= 1_000, `took ${Date.now() - revokedAt} ms`);
      });
      it('refuses an expired token', async () => {
        const created = await createToken(s.database, `expiring-${engine.name}`, ['--expires', '1s']);
        assert.equal((await listPlants(s.url, created.token)).status, 200);
        await sleep(1_100);
        const reply = await listPlants(s.url, created.token);
        assert.equal(reply.status, 401);
        assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      });
    });

    describe('a 401 does not tell whether a token once existed: unknown, revoked and expired answer alike', () => {
      it('gives one body and one challenge to all three, and keeps the reason in the log', async () => {
        const revoked = await createToken(s.database, `alike-revoked-${engine.name}`);
        const expired = await createToken(s.database, `alike-expired-${engine.name}`, ['--expires', '1s']);
        assert.equal(runCli(['token', 'revoke', revoked.id, '--database', s.database]).status, 0);
        await sleep(1_100);
        const answers = await Promise.all(
          [revoked.token, expired.token, 'pst_' + 'x'.repeat(43)].map(async (token) => {
            const reply = await listPlants(s.url, token);
            return { status: reply.status, body: reply.text, challenge: reply.headers.get('www-authenticate') };
          }),
        );
        assert.equal(answers[0]!.status, 401);
        assert.match(answers[0]!.challenge ?? '', /error="invalid_token"/);
        assert.deepEqual(answers[1], answers[0]);
        assert.deepEqual(answers[2], answers[0]);
        await sleep(200); // the log is written every 100 ms
        const reasons = s
          .server!.stdout()
          .split('\n')
          .filter((line) => line.includes('"request refused"'))
          .map((line) => (JSON.parse(line) as { reason: string }).reason);
        for (const reason of ['token revoked', 'token expired', 'unknown token'])
          assert.ok(reasons.includes(reason), reason);
      });
    });

    describe('the Bearer scheme word is case-insensitive', () => {
      for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
        it(`accepts "${scheme}"`, async () => {
          const reply = await call(`${s.url}/plants`, { headers: { authorization: `${scheme} ${s.token}` } });
          assert.equal(reply.status, 200);
        });
      }
    });

    describe('scopes: plants:read lists, plants:write creates, a missing scope is 403 insufficient_scope', () => {
      it('lets a read-only token list but not create', async () => {
        const { token } = await createToken(s.database, `reader-${engine.name}`, ['--scopes', 'plants:read']);
        assert.equal((await listPlants(s.url, token)).status, 200);
        const reply = await postPlant(s.url, token, { id: 1, name: 'x' });
        assert.equal(reply.status, 403);
        assert.ok(isErrorBody(reply));
        assert.match(reply.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
      });
      it('lets a write-only token create but not list', async () => {
        const { token } = await createToken(s.database, `writer-${engine.name}`, ['--scopes', 'plants:write']);
        assert.equal((await postPlant(s.url, token, { id: 1, name: 'x' })).status, 200);
        const reply = await listPlants(s.url, token);
        assert.equal(reply.status, 403);
        assert.match(reply.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
      });
      it('gives a new token every scope unless told', async () => {
        const created = await createToken(s.database, `both-${engine.name}`);
        assert.deepEqual([...created.scopes].sort(), ['plants:read', 'plants:write', 'webhooks:manage']);
      });
    });

    describe('authentication comes before anything else about the request', () => {
      it('answers 401, not 400/413/415, to an unauthenticated bad request', async () => {
        const bad = await call(`${s.url}/plants`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain' },
          body: 'x'.repeat(20_000),
        });
        const badQuery = await call(`${s.url}/plants?limit=-1`);
        for (const reply of [bad, badQuery]) {
          assert.equal(reply.status, 401, reply.text);
          assert.ok(isErrorBody(reply), reply.text);
          assert.match(reply.headers.get('www-authenticate') ?? '', /^Bearer realm="plant-store"/);
        }
      });
    });
  });
}
