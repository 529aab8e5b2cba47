import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { call } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { isErrorBody, realServer } from '../helpers/suite.js';
import {
  createWebhook,
  patchWebhook,
  recover,
  registerEndpoint,
  WEBHOOK_TEST_ARGS,
  type Endpoint,
} from '../helpers/webhooks.js';

const HOOK = 'http://127.0.0.1:9/hook';

for (const engine of ENGINES) {
  describe(`the /webhooks API (${engine.name})`, () => {
    const s = realServer(engine, WEBHOOK_TEST_ARGS);

    describe('POST /webhooks registers an endpoint: 201, Location, and the secret shown once', () => {
      it('answers the endpoint with a whsec_ secret of 24+ random bytes', async () => {
        const reply = await createWebhook(s.url, s.token, { url: HOOK, description: 'catalogue' });
        assert.equal(reply.status, 201, reply.text);
        const body = reply.json as Endpoint;
        assert.deepEqual(Object.keys(body).sort(), [
          'createdAt',
          'description',
          'enabled',
          'events',
          'id',
          'secret',
          'url',
        ]);
        assert.equal(reply.headers.get('location'), `/webhooks/${body.id}`);
        assert.match(body.id, /^ep_[\w-]+$/);
        assert.equal(body.url, HOOK);
        assert.deepEqual(body.events, ['plant.created'], 'plant.created is the default');
        assert.equal(body.description, 'catalogue');
        assert.equal(body.enabled, true);
        assert.ok(Math.abs(Date.parse(body.createdAt) - Date.now()) < 60_000);
        assert.match(body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
        assert.ok(Buffer.from(body.secret.slice(6), 'base64').length >= 24);
      });
      it('takes the events to send', async () => {
        const body = await registerEndpoint(s.url, s.token, {
          url: HOOK,
          events: ['plant.deleted', 'plant.updated', 'plant.deleted'],
        });
        assert.deepEqual(body.events, ['plant.deleted', 'plant.updated']);
      });
      it('registers it disabled when asked (enabled: false), enabled otherwise', async () => {
        const off = await registerEndpoint(s.url, s.token, { url: HOOK, enabled: false });
        assert.equal(off.enabled, false);
        const read = await call(`${s.url}/webhooks/${off.id}`, { token: s.token });
        assert.equal((read.json as { enabled: boolean }).enabled, false);
        assert.equal((await registerEndpoint(s.url, s.token, { url: HOOK })).enabled, true);
      });
      it('gives every endpoint its own secret', async () => {
        const a = await registerEndpoint(s.url, s.token, { url: HOOK });
        const b = await registerEndpoint(s.url, s.token, { url: HOOK });
        assert.notEqual(a.secret, b.secret);
        assert.notEqual(a.id, b.id);
      });
    });

    describe('GET /webhooks and GET /webhooks/{id} never show the secret', () => {
      it('lists and reads the endpoint without its secret', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK, description: 'read me' });
        const one = await call(`${s.url}/webhooks/${created.id}`, { token: s.token });
        assert.equal(one.status, 200);
        const { secret, ...shown } = created;
        assert.deepEqual(one.json, shown);
        assert.doesNotMatch(one.text, /whsec_/);
        const list = await call(`${s.url}/webhooks`, { token: s.token });
        assert.equal(list.status, 200);
        assert.ok((list.json as Endpoint[]).some((e) => e.id === created.id));
        assert.doesNotMatch(list.text, /whsec_|secret/);
        assert.ok(!list.text.includes(secret));
      });
      it('answers 404 for an unknown id', async () => {
        const reply = await call(`${s.url}/webhooks/ep_unknown`, { token: s.token });
        assert.equal(reply.status, 404);
        assert.ok(isErrorBody(reply));
      });
    });

    describe('PATCH /webhooks/{id} changes url, events, description and enabled', () => {
      it('changes what is given and keeps the rest', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK, description: 'before' });
        const reply = await patchWebhook(s.url, s.token, created.id, {
          url: 'http://127.0.0.1:10/other',
          events: ['plant.updated'],
        });
        assert.equal(reply.status, 200, reply.text);
        const { secret: _, ...before } = created;
        assert.deepEqual(reply.json, {
          ...before,
          url: 'http://127.0.0.1:10/other',
          events: ['plant.updated'],
        });
        const disabled = await patchWebhook(s.url, s.token, created.id, { enabled: false, description: '' });
        assert.equal((disabled.json as Endpoint).enabled, false);
        assert.equal((disabled.json as Endpoint).description, '');
        const unchanged = await patchWebhook(s.url, s.token, created.id, {});
        assert.deepEqual(unchanged.json, disabled.json);
        const again = await call(`${s.url}/webhooks/${created.id}`, { token: s.token });
        assert.deepEqual(again.json, disabled.json);
      });
      it('accepts application/merge-patch+json and refuses other media types with 415', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK });
        const merge = await call(`${s.url}/webhooks/${created.id}`, {
          method: 'PATCH',
          token: s.token,
          headers: { 'content-type': 'application/merge-patch+json' },
          body: '{"description":"merged"}',
        });
        assert.equal(merge.status, 200);
        const text = await call(`${s.url}/webhooks/${created.id}`, {
          method: 'PATCH',
          token: s.token,
          headers: { 'content-type': 'text/plain' },
          body: '{"description":"x"}',
        });
        assert.equal(text.status, 415);
        assert.ok(isErrorBody(text));
      });
    });

    describe('DELETE /webhooks/{id} removes the endpoint', () => {
      it('answers 204, then 404', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK });
        const url = `${s.url}/webhooks/${created.id}`;
        const deleted = await call(url, { method: 'DELETE', token: s.token });
        assert.equal(deleted.status, 204);
        assert.equal(deleted.text, '');
        for (const method of ['GET', 'DELETE']) {
          const gone = await call(url, { method, token: s.token });
          assert.equal(gone.status, 404, method);
          assert.ok(isErrorBody(gone), gone.text);
        }
        const listed = (await call(`${s.url}/webhooks`, { token: s.token })).json as Array<{ id: string }>;
        assert.ok(!listed.some((endpoint) => endpoint.id === created.id), 'no longer listed');
      });
    });

    describe('POST /webhooks/{id}/rotate-secret gives a new secret, shown once', () => {
      it('answers the endpoint with a new secret', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK });
        const reply = await call(`${s.url}/webhooks/${created.id}/rotate-secret`, { method: 'POST', token: s.token });
        assert.equal(reply.status, 200, reply.text);
        const rotated = reply.json as Endpoint;
        assert.match(rotated.secret, /^whsec_/);
        assert.notEqual(rotated.secret, created.secret);
        assert.equal(rotated.id, created.id);
        const read = await call(`${s.url}/webhooks/${created.id}`, { token: s.token });
        assert.doesNotMatch(read.text, /whsec_/);
      });
    });

    describe('the webhooks:manage scope guards every /webhooks operation', () => {
      it('is given to new API tokens by default, and its absence is a 403', async () => {
        const full = await createToken(s.database, `full-${engine.name}`);
        assert.ok(full.scopes.includes('webhooks:manage'));
        assert.equal((await createWebhook(s.url, full.token, { url: HOOK })).status, 201);
        const plantsOnly = await createToken(s.database, `plants-${engine.name}`, [
          '--scopes',
          'plants:read,plants:write',
        ]);
        for (const [method, path] of [
          ['GET', '/webhooks'],
          ['POST', '/webhooks'],
          ['GET', '/webhooks/ep_x'],
          ['DELETE', '/webhooks/ep_x'],
          ['GET', '/webhooks/ep_x/deliveries'],
        ] as const) {
          const reply = await call(`${s.url}${path}`, {
            method,
            token: plantsOnly.token,
            headers: { 'content-type': 'application/json' },
            ...(method === 'POST' && { body: JSON.stringify({ url: HOOK }) }),
          });
          assert.equal(reply.status, 403, `${method} ${path}`);
          assert.match(reply.headers.get('www-authenticate') ?? '', /insufficient_scope.*webhooks:manage/);
        }
        const manager = await createToken(s.database, `manager-${engine.name}`, ['--scopes', 'webhooks:manage']);
        assert.equal((await call(`${s.url}/webhooks`, { token: manager.token })).status, 200);
        assert.equal((await call(`${s.url}/plants`, { token: manager.token })).status, 403);
      });
      it('needs a token at all: 401 without one', async () => {
        const reply = await call(`${s.url}/webhooks`);
        assert.equal(reply.status, 401);
        assert.ok(isErrorBody(reply));
      });
    });

    describe('an endpoint receives plants: registering one, or changing where, what or whether it sends, needs plants:read too', () => {
      it('refuses a webhooks:manage token without plants:read with 403 insufficient_scope', async () => {
        const manager = (await createToken(s.database, `manage-only-${engine.name}`, ['--scopes', 'webhooks:manage']))
          .token;
        const insufficient = (reply: { status: number; headers: Headers }, what: string) => {
          assert.equal(reply.status, 403, what);
          assert.match(reply.headers.get('www-authenticate') ?? '', /error="insufficient_scope", scope="plants:read"/);
        };
        insufficient(await createWebhook(s.url, manager, { url: HOOK }), 'POST');
        // Its account's endpoint, registered by a token that reads plants.
        const account = `manage-only-${engine.name}`;
        const reader = (await createToken(s.database, account, ['--scopes', 'webhooks:manage,plants:read'])).token;
        const endpoint = await registerEndpoint(s.url, reader, { url: HOOK, enabled: false });
        for (const patch of [{ enabled: true }, { url: `${HOOK}2` }, { events: ['plant.deleted'] }]) {
          insufficient(await patchWebhook(s.url, manager, endpoint.id, patch), JSON.stringify(patch));
        }
        for (const patch of [{ description: 'mine' }, { enabled: false }]) {
          assert.equal((await patchWebhook(s.url, manager, endpoint.id, patch)).status, 200, JSON.stringify(patch));
        }
        assert.equal((await patchWebhook(s.url, reader, endpoint.id, { enabled: true })).status, 200);
      });
    });

    describe("one account cannot see or change another's endpoints", () => {
      it("answers 404 for another account's endpoint id, exactly as for an unknown one", async () => {
        const alice = (await createToken(s.database, `alice-${engine.name}`)).token;
        const bob = (await createToken(s.database, `bob-${engine.name}`)).token;
        const mine = await registerEndpoint(s.url, alice, { url: HOOK });
        const unknown = 'ep_AAAAAAAAAAAAAAAAAAAAAA';
        for (const id of [mine.id, unknown]) {
          const replies = [
            await call(`${s.url}/webhooks/${id}`, { token: bob }),
            await patchWebhook(s.url, bob, id, { enabled: false }),
            await call(`${s.url}/webhooks/${id}/rotate-secret`, { method: 'POST', token: bob }),
            await call(`${s.url}/webhooks/${id}/deliveries`, { token: bob }),
            await recover(s.url, bob, id, { since: '2020-01-01T00:00:00Z' }),
            await call(`${s.url}/webhooks/${id}`, { method: 'DELETE', token: bob }),
          ];
          for (const reply of replies) {
            assert.equal(reply.status, 404, reply.text);
            assert.ok(isErrorBody(reply));
          }
        }
        assert.deepEqual((await call(`${s.url}/webhooks`, { token: bob })).json, []);
        const still = await call(`${s.url}/webhooks/${mine.id}`, { token: alice });
        assert.equal((still.json as Endpoint).enabled, true, "bob's PATCH changed nothing");
      });
    });

    describe('an account has at most 16 endpoints: the 17th is a 409', () => {
      it('refuses the 17th, and accepts one again after a delete', async () => {
        const token = (await createToken(s.database, `many-${engine.name}`)).token;
        const created = await Promise.all(
          Array.from({ length: 16 }, () => registerEndpoint(s.url, token, { url: HOOK })),
        );
        const seventeenth = await createWebhook(s.url, token, { url: HOOK });
        assert.equal(seventeenth.status, 409);
        assert.ok(isErrorBody(seventeenth));
        assert.match((seventeenth.json as { message: string }).message, /16/);
        await call(`${s.url}/webhooks/${created[0]!.id}`, { method: 'DELETE', token });
        assert.equal((await createWebhook(s.url, token, { url: HOOK })).status, 201);
      });
      it('holds when many registrations race', async () => {
        const token = (await createToken(s.database, `race-${engine.name}`)).token;
        const replies = await Promise.all(Array.from({ length: 24 }, () => createWebhook(s.url, token, { url: HOOK })));
        assert.equal(replies.filter((r) => r.status === 201).length, 16);
        assert.equal(replies.filter((r) => r.status === 409).length, 8);
        assert.equal(((await call(`${s.url}/webhooks`, { token })).json as unknown[]).length, 16);
      });
    });

    describe('bad input is a 400 that names the field', () => {
      const cases: Array<[string, unknown, RegExp]> = [
        ['no url', {}, /url/],
        ['a url that is not a string', { url: 5 }, /url/],
        ['a relative url', { url: '/hook' }, /url/],
        ['a url of another scheme', { url: 'ftp://127.0.0.1/hook' }, /url/],
        ['a url with credentials', { url: 'http://user:pw@127.0.0.1/hook' }, /url.*credentials/],
        ['a url over 2048 characters', { url: `http://127.0.0.1/${'a'.repeat(2040)}` }, /url.*2048/],
        ['events that are not an array', { url: HOOK, events: 'plant.created' }, /events/],
        ['no events', { url: HOOK, events: [] }, /events/],
        ['an unknown event', { url: HOOK, events: ['plant.eaten'] }, /events.*plant\.eaten/],
        ['a description that is not a string', { url: HOOK, description: 5 }, /description/],
        ['a description over 256 characters', { url: HOOK, description: 'd'.repeat(257) }, /description/],
        ['a body that is not an object', [HOOK], /object/],
        ['a url with a leading space', { url: ` ${HOOK}` }, /url.*spaces or control characters/],
        ['a url with a trailing newline', { url: `${HOOK}\n` }, /url.*spaces or control characters/],
        ['a url with a tab inside', { url: 'http://127.0.0.1/ho\tok' }, /url.*spaces or control characters/],
        ['enabled that is not a boolean', { url: HOOK, enabled: 'no' }, /enabled/],
        // Stored as sent, it would be read back as U+FFFD: another URL than the one answered.
        ['a url with a lone surrogate', { url: `${HOOK}\ud800` }, /url.*unpaired surrogate/],
        ['a description with a lone surrogate', { url: HOOK, description: 'a\udc00' }, /description.*surrogate/],
      ];
      for (const [what, body, message] of cases) {
        it(`POST /webhooks with ${what}`, async () => {
          const reply = await createWebhook(s.url, s.token, body);
          assert.equal(reply.status, 400, reply.text);
          assert.ok(isErrorBody(reply));
          assert.match((reply.json as { message: string }).message, message);
        });
      }
      it('PATCH with enabled that is not a boolean, or a bad url', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK });
        for (const [body, message] of [
          [{ enabled: 'yes' }, /enabled/],
          [{ url: 'not a url' }, /url/],
          [{ url: `${HOOK}\ud800` }, /url.*unpaired surrogate/],
          [{ events: [] }, /events/],
        ] as const) {
          const reply = await patchWebhook(s.url, s.token, created.id, body);
          assert.equal(reply.status, 400);
          assert.match((reply.json as { message: string }).message, message);
        }
      });
      it('a malformed endpoint id, a bad limit, a bad recover window', async () => {
        const created = await registerEndpoint(s.url, s.token, { url: HOOK });
        const checks: Array<[Promise<{ status: number; json: unknown }>, RegExp]> = [
          [call(`${s.url}/webhooks/not-an-id`, { token: s.token }), /id/],
          [call(`${s.url}/webhooks/ep_${'a'.repeat(300)}`, { token: s.token }), /\bid\b/],
          [call(`${s.url}/webhooks/ep_${'a'.repeat(300)}/deliveries`, { token: s.token }), /\bid\b/],
          [call(`${s.url}/webhooks/${created.id}/deliveries?limit=0`, { token: s.token }), /limit/],
          [call(`${s.url}/webhooks/${created.id}/deliveries?limit=abc`, { token: s.token }), /limit/],
          [recover(s.url, s.token, created.id, {}), /since/],
          [recover(s.url, s.token, created.id, { since: 'yesterday' }), /since/],
          [recover(s.url, s.token, created.id, { since: '2026-01-01' }), /since/],
          [
            recover(s.url, s.token, created.id, { since: '2026-01-02T00:00:00Z', until: '2026-01-01T00:00:00Z' }),
            /until/,
          ],
        ];
        for (const [pending, message] of checks) {
          const reply = await pending;
          assert.equal(reply.status, 400);
          assert.match((reply.json as { message: string }).message, message);
        }
      });
    });

    describe('unknown methods on /webhooks paths answer 405 with Allow', () => {
      it('lists the methods of each path', async () => {
        const put = await call(`${s.url}/webhooks`, { method: 'PUT', token: s.token });
        assert.equal(put.status, 405);
        assert.equal(put.headers.get('allow'), 'GET, HEAD, POST');
        const one = await call(`${s.url}/webhooks/ep_x`, { method: 'POST', token: s.token });
        assert.equal(one.status, 405);
        assert.equal(one.headers.get('allow'), 'GET, HEAD, PATCH, DELETE');
      });
    });
  });
}
