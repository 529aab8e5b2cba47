import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { sqlite } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { realServer } from '../helpers/suite.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** The Content-Type of an answer to raw bytes the HTTP parser rejects. */
function rawAnswerType(url: string, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve(/^content-type: (.*)\r$/im.exec(received)?.[1] ?? ''));
    socket.end(bytes);
  });
}

describe('every JSON answer has one Content-Type: application/json; charset=utf-8', () => {
  const s = realServer(sqlite);

  it('on creates, pages, streamed lists, one plant, and every kind of error', async () => {
    const answers = {
      create: await postPlant(s.url, s.token, { id: 1, name: 'a' }),
      page: await listPlants(s.url, s.token, '?limit=5'),
      stream: await listPlants(s.url, s.token),
      one: await call(`${s.url}/plants/1`, { token: s.token }),
      unauthenticated: await listPlants(s.url, 'pst_nope'),
      badQuery: await listPlants(s.url, s.token, '?limit=x'),
      unknownPath: await call(`${s.url}/nowhere`),
      wrongMethod: await call(`${s.url}/plants`, { method: 'PUT' }),
      health: await call(`${s.url}/healthz`),
    };
    for (const [what, reply] of Object.entries(answers)) {
      assert.equal(reply.headers.get('content-type'), JSON_TYPE, what);
    }
    assert.equal(await rawAnswerType(s.url, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'), JSON_TYPE);
  });
});
