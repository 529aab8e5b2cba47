import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { AddressGuard } from '../../src/webhooks/address-guard.js';
import { attempt, receiverAgents, retryAfterMs } from '../../src/webhooks/attempt.js';

/** One POST to a receiver, against real receivers on 127.0.0.1: what it sends, and what any answer comes to. */

const guard = new AddressGuard(true);
const agents = receiverAgents(guard);
const options = { timeoutMs: 2_000, guard, agents };

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver that answers each POST with `answer`, and keeps what it was sent. */
async function receiver(answer: (response: ServerResponse) => void) {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push({ headers: request.headers, body });
      answer(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url, received, close };
}

after(() => {
  agents.http.destroy();
  agents.https.destroy();
});

describe('attempt: the POST a receiver gets', () => {
  it('sends the body with its length and the given headers', async () => {
    const r = await receiver((response) => response.writeHead(204).end());
    try {
      const result = await attempt(r.url, { 'webhook-id': 'msg_1' }, '{"id":1}', options);
      assert.deepEqual(result, { status: 204, error: null, retryAfterMs: null });
      assert.equal(r.received[0]!.body, '{"id":1}');
      assert.equal(r.received[0]!.headers['content-length'], '8');
      assert.equal(r.received[0]!.headers['webhook-id'], 'msg_1');
    } finally {
      await r.close();
    }
  });
});

describe('attempt: any answer is a status, none is an error that says why', () => {
  it('reports any status as it came, a redirect included (not followed)', async () => {
    for (const status of [200, 302, 410, 500]) {
      const r = await receiver((response) => response.writeHead(status, { location: 'http://127.0.0.1:1/' }).end());
      try {
        assert.deepEqual(await attempt(r.url, {}, '{}', options), { status, error: null, retryAfterMs: null });
        assert.equal(r.received.length, 1);
      } finally {
        await r.close();
      }
    }
  });

  it("reads Retry-After in seconds from the receiver's answer", async () => {
    const r = await receiver((response) => response.writeHead(503, { 'retry-after': '120' }).end());
    try {
      assert.deepEqual(await attempt(r.url, {}, '{}', options), { status: 503, error: null, retryAfterMs: 120_000 });
    } finally {
      await r.close();
    }
  });

  it('gives up when the receiver does not answer in time', async () => {
    const r = await receiver(() => {});
    try {
      const result = await attempt(r.url, {}, '{}', { ...options, timeoutMs: 300 });
      assert.deepEqual(result, { status: null, error: 'no answer within 0.3 s', retryAfterMs: null });
    } finally {
      await r.close();
    }
  });

  it('says so when nothing listens', async () => {
    const r = await receiver((response) => response.end());
    await r.close();
    assert.deepEqual(await attempt(r.url, {}, '{}', options), {
      status: null,
      error: 'connection refused',
      retryAfterMs: null,
    });
  });

  it('resolves on the status, whatever the size of the answer body (read past 64 KiB, never kept)', async () => {
    const r = await receiver((response) => {
      response.writeHead(200);
      response.end(Buffer.alloc(1024 * 1024, 'x'));
    });
    try {
      assert.deepEqual(await attempt(r.url, {}, '{}', options), { status: 200, error: null, retryAfterMs: null });
    } finally {
      await r.close();
    }
  });

  it('refuses an address the guard does not allow, without connecting', async () => {
    const r = await receiver((response) => response.end());
    try {
      const strict = new AddressGuard(false);
      const result = await attempt(r.url, {}, '{}', { ...options, guard: strict });
      assert.equal(result.status, null);
      assert.match(result.error!, /^address not allowed: /);
      assert.equal(r.received.length, 0);
    } finally {
      await r.close();
    }
  });
});

describe('retryAfterMs: seconds or an HTTP date, anything else ignored', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  it('reads delay-seconds', () => assert.equal(retryAfterMs(' 30 ', now), 30_000));
  it('reads an HTTP date as the time until it, never negative', () => {
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:01:00 GMT', now), 60_000);
    assert.equal(retryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now), 0);
  });
  it('ignores what is neither', () => {
    assert.equal(retryAfterMs(undefined, now), null);
    assert.equal(retryAfterMs('soon', now), null);
  });
});
