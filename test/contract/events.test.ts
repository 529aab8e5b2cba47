import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { before, describe, it } from 'node:test';
import { ENGINES } from '../helpers/engines.js';
import { call, postPlant, type Reply } from '../helpers/http.js';
import { createToken } from '../helpers/server.js';
import { openFeed, type OpenFeed, type SseMessage } from '../helpers/sse.js';
import { isErrorBody, realServer } from '../helpers/suite.js';

/** The contract's "The change feed: GET /events (Server-Sent Events)", one describe per rule. */

let nextId = 9007199254740993n;
const freshId = () => String(nextId++);

function assertError(reply: Reply, status: number, message?: RegExp) {
  assert.equal(reply.status, status, reply.text);
  assert.ok(isErrorBody(reply), `the Error body: ${reply.text}`);
  if (message) assert.match((reply.json as { message: string }).message, message);
}

/** GET /events answered with an error: read whole, as call() reads any answer. */
function refused(base: string, token: string | undefined, headers: Record<string, string>, query = ''): Promise<Reply> {
  return call(`${base}/events${query}`, { token, headers });
}

/** A request with no Accept header at all (fetch always adds one). */
function withoutAccept(base: string, token: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}/events`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () =>
        resolve({
          url: `${base}/events`,
          status: res.statusCode!,
          headers: new Headers(res.headers as Record<string, string>),
          text,
          json: JSON.parse(text),
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function ready(feed: OpenFeed): Promise<SseMessage> {
  const first = await feed.next();
  assert.ok(first !== null);
  assert.equal(first.event, 'ready');
  return first;
}

for (const engine of ENGINES) {
  describe(`GET /events (${engine.name})`, () => {
    const s = realServer(engine);
    const tokens = { writer: '', other: '', reader: '' };
    before(async () => {
      tokens.writer = (await createToken(s.database, 'feed-writer-only', ['--scopes', 'plants:write'])).token;
      tokens.reader = (await createToken(s.database, 'default', ['--scopes', 'plants:read'])).token;
      tokens.other = (await createToken(s.database, 'feed-other')).token;
    });
    const patch = (id: string, body: object) =>
      call(`${s.url}/plants/${id}`, {
        method: 'PATCH',
        token: s.token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const remove = (id: string) => call(`${s.url}/plants/${id}`, { method: 'DELETE', token: s.token });

    describe('opens a kept-open text/event-stream with retry: and a ready message', () => {
      it('answers 200 text/event-stream, no-store, the API security headers, then retry and ready', async () => {
        const feed = await openFeed(s.url, { token: s.token });
        try {
          assert.equal(feed.status, 200);
          assert.match(feed.headers.get('content-type') ?? '', /^text\/event-stream/);
          assert.equal(feed.headers.get('cache-control'), 'no-store');
          assert.equal(feed.headers.get('x-content-type-options'), 'nosniff');
          const first = await ready(feed);
          assert.equal(first.data, '{}');
          assert.ok(first.id !== undefined && first.id.length > 0, 'ready carries a cursor');
          assert.ok(first.retry !== undefined && first.retry > 0, 'retry: at the start');
        } finally {
          feed.close();
        }
      });
    });

    describe('needs an Accept header that admits text/event-stream', () => {
      for (const accept of ['text/event-stream', '*/*', 'text/*', 'application/json, text/event-stream;q=0.5']) {
        it(`admits "${accept}"`, async () => {
          const feed = await openFeed(s.url, { token: s.token, accept });
          feed.close();
          assert.equal(feed.status, 200);
        });
      }
      for (const accept of ['application/json', 'text/event-stream;q=0', 'text/html, */*;q=0']) {
        it(`refuses "${accept}" with 406`, async () => {
          assertError(await refused(s.url, s.token, { accept }), 406, /text\/event-stream/);
        });
      }
      it('refuses a request without Accept with 406', async () => {
        assertError(await withoutAccept(s.url, s.token), 406);
      });
    });

    describe('needs plants:read, from the Authorization header only', () => {
      it('401 without a token, 403 without the scope', async () => {
        assertError(await refused(s.url, undefined, { accept: 'text/event-stream' }), 401);
        assertError(await refused(s.url, tokens.writer, { accept: 'text/event-stream' }), 403);
      });
      it('a token in the URL is not accepted', async () => {
        const reply = await refused(s.url, undefined, { accept: 'text/event-stream' }, `?access_token=${s.token}`);
        assertError(reply, 401);
      });
      it('a token with plants:read alone opens it', async () => {
        const feed = await openFeed(s.url, { token: tokens.reader });
        feed.close();
        assert.equal(feed.status, 200);
      });
    });

    describe('one message per acknowledged change, with the webhook body', () => {
      it('sends plant.created, plant.updated and plant.deleted with exact int64 ids, none for a replay, a 400, a 409 or an empty PATCH', async () => {
        const feed = await openFeed(s.url, { token: s.token });
        try {
          await ready(feed);
          const id = freshId();
          assert.equal((await postPlant(s.url, s.token, `{"id":${id},"name":"Fern"}`)).status, 200);
          assert.equal((await postPlant(s.url, s.token, `{"id":${id},"name":"Fern"}`)).status, 200); // replay
          assert.equal((await postPlant(s.url, s.token, `{"id":${id},"name":"Other"}`)).status, 409);
          assert.equal((await postPlant(s.url, s.token, '{"id":1}')).status, 400);
          assert.equal((await patch(id, {})).status, 200); // changes nothing
          assert.equal((await patch(id, { tag: 'green' })).status, 200);
          assert.equal((await remove(id)).status, 204);
          const [created, updated, deleted] = await feed.take(3);
          assert.deepEqual(
            [created!.event, updated!.event, deleted!.event],
            ['plant.created', 'plant.updated', 'plant.deleted'],
          );
          assert.equal(created!.data, `{"id":${id},"name":"Fern"}`);
          assert.equal(updated!.data, `{"id":${id},"name":"Fern","tag":"green"}`);
          assert.equal(deleted!.data, `{"id":${id},"name":"Fern","tag":"green"}`);
          const ids = [created!.id, updated!.id, deleted!.id];
          assert.equal(new Set(ids).size, 3, 'each message has its own cursor');
          // Nothing else: a marker change arrives next, not a message for the refused requests.
          const marker = freshId();
          await postPlant(s.url, s.token, `{"id":${marker},"name":"marker"}`);
          const next = await feed.next();
          assert.equal(next?.data, `{"id":${marker},"name":"marker"}`);
        } finally {
          feed.close();
        }
      });

      it("shows only the caller's account's events", async () => {
        const mine = await openFeed(s.url, { token: s.token });
        const theirs = await openFeed(s.url, { token: tokens.other });
        try {
          await ready(mine);
          await ready(theirs);
          const id = freshId();
          await postPlant(s.url, tokens.other, `{"id":${id},"name":"theirs"}`);
          const mineId = freshId();
          await postPlant(s.url, s.token, `{"id":${mineId},"name":"mine"}`);
          assert.equal((await theirs.next())?.data, `{"id":${id},"name":"theirs"}`);
          assert.equal((await mine.next())?.data, `{"id":${mineId},"name":"mine"}`);
        } finally {
          mine.close();
          theirs.close();
        }
      });
    });

    describe('resumes after a cursor: Last-Event-ID or ?after=', () => {
      it('sends every later event, after a ready that repeats the cursor, then live', async () => {
        const feed = await openFeed(s.url, { token: s.token });
        const start = await ready(feed);
        const ids = [freshId(), freshId(), freshId()];
        for (const id of ids) await postPlant(s.url, s.token, `{"id":${id},"name":"r"}`);
        const seen = await feed.take(3);
        feed.close();
        const later = [seen[1]!.data, seen[2]!.data];
        for (const how of ['lastEventId', 'after'] as const) {
          const resumed = await openFeed(s.url, { token: s.token, [how]: seen[0]!.id });
          try {
            assert.equal((await ready(resumed)).id, seen[0]!.id);
            assert.deepEqual(
              (await resumed.take(later.length)).map((m) => m.data),
              later,
            );
            const live = freshId();
            await postPlant(s.url, s.token, `{"id":${live},"name":"live"}`);
            assert.equal((await resumed.next())?.data, `{"id":${live},"name":"live"}`);
            later.push(`{"id":${live},"name":"live"}`);
          } finally {
            resumed.close();
          }
        }
        // From the ready cursor of the first stream: all three and both live ones.
        const fromStart = await openFeed(s.url, { token: s.token, after: start.id });
        try {
          await ready(fromStart);
          const five = await fromStart.take(5);
          assert.deepEqual(
            five.slice(0, 3).map((m) => m.id),
            seen.map((m) => m.id),
          );
        } finally {
          fromStart.close();
        }
      });

      it('Last-Event-ID wins over ?after= (a browser reconnecting keeps the URL)', async () => {
        const feed = await openFeed(s.url, { token: s.token });
        const start = await ready(feed);
        const id = freshId();
        await postPlant(s.url, s.token, `{"id":${id},"name":"w"}`);
        const created = await feed.next();
        feed.close();
        const resumed = await openFeed(s.url, { token: s.token, after: start.id, lastEventId: created!.id });
        try {
          assert.equal((await ready(resumed)).id, created!.id);
        } finally {
          resumed.close();
        }
      });
    });

    describe('a malformed or foreign cursor is a 400 naming it', () => {
      it('refuses malformed cursors', async () => {
        for (const bad of ['x', 'AAAAAAAAAAAAAAAAAAAAAA', 'not a cursor at all!!', '']) {
          assertError(
            await refused(s.url, s.token, { accept: 'text/event-stream', 'last-event-id': bad }),
            400,
            /Last-Event-ID/,
          );
          assertError(
            await refused(s.url, s.token, { accept: 'text/event-stream' }, `?after=${encodeURIComponent(bad)}`),
            400,
            /after/,
          );
        }
      });
      it("refuses another account's cursor", async () => {
        const theirs = await openFeed(s.url, { token: tokens.other });
        const cursor = (await ready(theirs)).id!;
        theirs.close();
        assertError(
          await refused(s.url, s.token, { accept: 'text/event-stream', 'last-event-id': cursor }),
          400,
          /Last-Event-ID/,
        );
        assertError(await refused(s.url, s.token, { accept: 'text/event-stream' }, `?after=${cursor}`), 400, /after/);
      });
      it('refuses ?after= given twice', async () => {
        assertError(await refused(s.url, s.token, { accept: 'text/event-stream' }, '?after=a&after=b'), 400, /after/);
      });
    });

    describe('is GET only', () => {
      it('HEAD and POST get 405 with Allow: GET', async () => {
        for (const method of ['HEAD', 'POST']) {
          const reply = await call(`${s.url}/events`, { method, token: s.token });
          assert.equal(reply.status, 405);
          assert.equal(reply.headers.get('allow'), 'GET');
        }
      });
    });
  });
}
