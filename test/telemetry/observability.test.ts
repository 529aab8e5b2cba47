import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { lazyChildLogger } from '../../src/telemetry/observability.js';
import { ENGINES, sqlite } from '../helpers/engines.js';
import { testApp, type TestApp } from '../helpers/app.js';

function requestLines(logs: string[]): Array<Record<string, unknown>> {
  return logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.msg === 'request');
}

describe('logs: one JSON line per request, tokens never logged', () => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await testApp(sqlite);
    token = await t.token('logged-account');
  });
  after(() => t.close());

  it('logs request id, account, route, status and duration once per request', async () => {
    const before = requestLines(t.logs).length;
    const reply = await t.app.inject({
      method: 'GET',
      url: '/plants?limit=5',
      headers: { authorization: `Bearer ${token}`, 'x-request-id': 'client-id-42' },
    });
    assert.equal(reply.statusCode, 200);
    assert.equal(reply.headers['x-request-id'], 'client-id-42');
    const lines = requestLines(t.logs).slice(before);
    assert.equal(lines.length, 1);
    const [line] = lines;
    assert.equal(line!.reqId, 'client-id-42');
    assert.equal(line!.account, 'logged-account');
    assert.equal(line!.route, '/plants');
    assert.equal(line!.status, 200);
    assert.equal(typeof line!.durationMs, 'number');
  });

  it('writes the request line as pino would: level, time, pid, hostname, then the fields and msg', async () => {
    const before = t.logs.length;
    await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'x-request-id': 'shape-1' } });
    const line = t.logs.slice(before).find((l) => l.includes('"shape-1"'))!;
    assert.deepEqual(Object.keys(JSON.parse(line)), [
      'level',
      'time',
      'pid',
      'hostname',
      'reqId',
      'method',
      'route',
      'url',
      'status',
      'durationMs',
      'msg',
    ]);
    assert.equal(JSON.parse(line).level, 30);
  });

  it('logs through request.log with the request id, its child logger made only then', () => {
    const lines: string[] = [];
    const parent = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const log = lazyChildLogger(parent, { reqId: 'child-7' }, {});
    assert.equal(lines.length, 0);
    log.error({ detail: 1 }, 'went wrong');
    log.debug('below the level');
    assert.equal(lines.length, 1);
    assert.deepEqual((({ level, reqId, detail, msg }) => ({ level, reqId, detail, msg }))(JSON.parse(lines[0]!)), {
      level: 50,
      reqId: 'child-7',
      detail: 1,
      msg: 'went wrong',
    });
    assert.equal(log.level, 'info');
  });

  it('makes a request id when the client sends none, an unsafe one or a token, and returns it', async () => {
    for (const headers of [{}, { 'x-request-id': 'bad id\nwith newline' }, { 'x-request-id': token }]) {
      const reply = await t.app.inject({ method: 'GET', url: '/healthz', headers });
      assert.match(String(reply.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    }
  });

  it('never writes the Authorization header or a token, valid or not', async () => {
    const bogus = 'pst_' + 'y'.repeat(43);
    await t.app.inject({ method: 'GET', url: '/plants', headers: { authorization: `Bearer ${token}` } });
    await t.app.inject({ method: 'GET', url: '/plants', headers: { authorization: `Bearer ${bogus}` } });
    await t.app.inject({
      method: 'POST',
      url: '/plants',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: '{"id":1,"name":"x"}',
    });
    const all = t.logs.join('');
    assert.ok(!all.includes(token));
    assert.ok(!all.includes(bogus));
    assert.doesNotMatch(all, /authorization/i);
  });
});

describe('probes and scrapes (/healthz, /readyz, /metrics) are logged at debug, not info', () => {
  const probes = ['/healthz', '/readyz', '/metrics'];

  it('leaves them out of the log at info, and logs the other requests', async () => {
    const t = await testApp(sqlite, { logLevel: 'info' });
    try {
      for (const url of [...probes, '/openapi.json']) assert.equal((await t.app.inject({ url })).statusCode, 200, url);
      assert.deepEqual(
        requestLines(t.logs).map((line) => line.route),
        ['/openapi.json'],
      );
    } finally {
      await t.close();
    }
  });

  it('logs them at level debug (20) with --log-level debug, the others still at info (30)', async () => {
    const t = await testApp(sqlite, { logLevel: 'debug' });
    try {
      for (const url of [...probes, '/openapi.json']) await t.app.inject({ url });
      assert.deepEqual(
        requestLines(t.logs).map((line) => [line.route, line.level]),
        [...probes.map((route) => [route, 20]), ['/openapi.json', 30]],
      );
    } finally {
      await t.close();
    }
  });
});

describe('GET /metrics: Prometheus text', () => {
  let t: TestApp;
  before(async () => {
    t = await testApp(sqlite);
    const token = await t.token('metered');
    await t.app.inject({
      method: 'POST',
      url: '/plants',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: '{"id":1,"name":"x"}',
    });
    await t.app.inject({ method: 'GET', url: '/plants', headers: { authorization: 'Bearer pst_nope' } });
  });
  after(() => t.close());

  it('counts a 405 under the route of its path, and only an unknown path as unmatched', async () => {
    await t.app.inject({ method: 'PUT', url: '/plants' });
    await t.app.inject({ method: 'PUT', url: '/plants/5' });
    await t.app.inject({ method: 'GET', url: '/no/such/path' });
    const { body } = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.match(body, /plant_store_http_requests_total\{method="PUT",route="\/plants",status="405"\} [1-9]/);
    assert.match(body, /plant_store_http_requests_total\{method="PUT",route="\/plants\/:id",status="405"\} [1-9]/);
    assert.match(body, /plant_store_http_requests_total\{method="GET",route="unmatched",status="404"\} [1-9]/);
    assert.doesNotMatch(body, /route="unmatched",status="405"/);
  });

  it('exposes request counts and latency by route and status, creates, auth failures, storage latency, process metrics', async () => {
    const reply = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(reply.statusCode, 200);
    assert.match(String(reply.headers['content-type']), /^text\/plain/);
    for (const pattern of [
      /plant_store_http_requests_total\{method="POST",route="\/plants",status="200"\} \d+/,
      /plant_store_http_request_duration_seconds_bucket\{le="0\.005",method="POST",route="\/plants",status="200"\}/,
      /plant_store_plants_created_total \d+/,
      /plant_store_auth_failures_total\{reason="invalid_token"\} \d+/,
      /plant_store_storage_operation_duration_seconds_count\{operation="insert"\} \d+/,
      /plant_store_storage_commits_total \d+/,
      /process_resident_memory_bytes \d+/,
    ]) {
      assert.match(reply.body, pattern);
    }
  });
});

for (const engine of ENGINES) {
  describe(`health (${engine.name})`, () => {
    let t: TestApp;
    before(async () => {
      t = await testApp(engine);
    });
    after(() => t.close());

    it('GET /healthz is 200 while the process lives', async () => {
      const reply = await t.app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(reply.statusCode, 200);
      assert.deepEqual(reply.json(), { status: 'ok' });
    });
    it('GET /readyz is 200 when storage answers', async () => {
      const reply = await t.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(reply.statusCode, 200);
    });
    it('GET /readyz is 503 with the Error body once storage is gone', async () => {
      await t.storage.close();
      const reply = await t.app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(reply.statusCode, 503);
      assert.deepEqual(Object.keys(reply.json()), ['error', 'message']);
      assert.equal(reply.json().error, 503);
    });
  });
}
