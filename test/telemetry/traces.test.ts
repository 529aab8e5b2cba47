import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, get, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES, sqlite, type Engine } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { runCli, startServer, untilListening, type RunningServer } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/** One span as an OTLP/HTTP JSON receiver sees it, attributes flattened. */
interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status: { code?: number; message?: string };
  events: Array<{ name: string }>;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

const SPAN_KIND = { internal: 1, server: 2, client: 3 };
const STATUS_ERROR = 2;

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}

function flatten(attributes: OtlpAttributes = []): Record<string, unknown> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => [
      key,
      value.intValue !== undefined
        ? Number(value.intValue)
        : (value.stringValue ?? value.boolValue ?? value.doubleValue),
    ]),
  );
}

type OtlpAttributes = Array<{ key: string; value: OtlpValue }>;

/** The body of an OTLP/HTTP JSON export (the fields read here). */
interface OtlpTraces {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttributes };
    scopeSpans: Array<{ spans: Array<Omit<ReceivedSpan, 'attributes' | 'resource'> & { attributes: OtlpAttributes }> }>;
  }>;
}

/** A tiny OTLP/HTTP receiver on 127.0.0.1: keeps every span posted to /v1/traces as JSON. */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private readonly server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      // Anything but OTLP/HTTP JSON on the traces path is refused, so its spans are never found.
      if (request.url !== '/v1/traces' || !/^application\/json/.test(request.headers['content-type'] ?? '')) {
        response.writeHead(415).end();
        return;
      }
      this.keep(JSON.parse(Buffer.concat(chunks).toString()) as OtlpTraces);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async start(port = 0) {
    await new Promise<void>((resolve) => this.server.listen(port, '127.0.0.1', resolve));
    return this;
  }

  stop() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(resolve));
  }

  private keep(body: OtlpTraces) {
    for (const { resource, scopeSpans } of body.resourceSpans) {
      for (const { spans } of scopeSpans) {
        for (const span of spans) {
          this.spans.push({ ...span, attributes: flatten(span.attributes), resource: flatten(resource.attributes) });
        }
      }
    }
  }

  /** The first span that matches, waiting for the exporter's next batch (generous: a loaded machine). */
  async find(matches: (span: ReceivedSpan) => boolean, timeoutMs = 20_000): Promise<ReceivedSpan> {
    return eventually(
      () => `such a span; received: ${this.spans.map((s) => s.name).join(', ')}`,
      () => this.spans.find(matches),
      timeoutMs,
      50,
    );
  }
}

function tracedEnv(receiver: OtlpReceiver, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
    ...extra,
  };
}

/** Request log lines of a server, once its buffered output has been written (every 100 ms). */
async function requestLine(server: RunningServer, matches: (line: Record<string, unknown>) => boolean) {
  return eventually(
    () => `such a request line:\n${server.output()}`,
    () =>
      server
        .output()
        .split('\n')
        .filter((text) => text.startsWith('{"') && text.endsWith('}'))
        .map((text) => JSON.parse(text) as Record<string, unknown>)
        .find((line) => line.msg === 'request' && matches(line)),
    5_000,
    50,
  );
}

/** A port where nothing listens (a JWKS URL or a receiver that cannot be reached). */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A GET on a connection of its own (the cluster hands new connections to the workers in turn). */
function getOnNewConnection(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode!));
    }).on('error', reject);
  });
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';

for (const engine of ENGINES) tracesOn(engine);

function tracesOn(engine: Engine) {
  describe(`traces on (${engine.name}): a server span per request, storage spans its children`, () => {
    let receiver: OtlpReceiver;
    let store: Awaited<ReturnType<Engine['fresh']>>;
    let server: RunningServer;
    let token: string;
    before(async () => {
      receiver = await new OtlpReceiver().start();
      store = await engine.fresh();
      // JWTs checked against a JWKS URL where nothing answers: a 5xx on demand.
      const jwt = ['--jwt-jwks-url', `http://127.0.0.1:${await freePort()}/jwks.json`, '--jwt-audience', 'plant-store'];
      server = await startServer({ database: store.url, args: jwt, env: tracedEnv(receiver) });
      token = server.firstToken!;
    });
    after(async () => {
      await server.stop();
      await store.drop();
      await receiver.stop();
    });

    it('continues an incoming traceparent: same trace id, the caller span as parent, storage insert as child', async () => {
      const reply = await call(`${server.url}/plants`, {
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json', traceparent: `00-${TRACE_ID}-${PARENT_SPAN_ID}-01` },
        body: '{"id":1,"name":"Fern"}',
      });
      assert.equal(reply.status, 200);
      const http = await receiver.find((s) => s.traceId === TRACE_ID && s.kind === SPAN_KIND.server);
      assert.equal(http.name, 'POST /plants');
      assert.equal(http.parentSpanId, PARENT_SPAN_ID);
      assert.equal(http.attributes['http.route'], '/plants');
      assert.equal(http.attributes['http.request.method'], 'POST');
      assert.equal(http.attributes['http.response.status_code'], 200);
      assert.equal(http.attributes['plant_store.account'], 'default');
      assert.notEqual(http.status.code, STATUS_ERROR);
      const storage = await receiver.find((s) => s.traceId === TRACE_ID && s.name === 'storage insert');
      assert.equal(storage.parentSpanId, http.spanId);
      assert.equal(storage.kind, SPAN_KIND.client);
      assert.equal(storage.attributes['db.system.name'], engine.name === 'sqlite' ? 'sqlite' : 'postgresql');
      assert.equal(storage.attributes['db.operation.name'], 'insert');
      assert.equal(http.resource['service.name'], 'plant-store');
    });

    it('writes the trace id in the request log line', async () => {
      const line = await requestLine(server, (l) => l.method === 'POST' && l.traceId === TRACE_ID);
      assert.equal(line.status, 200);
    });

    it('starts a new trace without a traceparent: GET span by route template, storage list as child', async () => {
      assert.equal((await listPlants(server.url, token, '?limit=10')).status, 200);
      const line = await requestLine(server, (l) => l.method === 'GET' && l.url === '/plants?limit=10');
      assert.match(String(line.traceId), /^[0-9a-f]{32}$/);
      assert.notEqual(line.traceId, TRACE_ID);
      const http = await receiver.find((s) => s.traceId === line.traceId && s.kind === SPAN_KIND.server);
      assert.equal(http.name, 'GET /plants');
      assert.equal(http.parentSpanId ?? '', '');
      assert.equal(http.attributes['http.response.status_code'], 200);
      const storage = await receiver.find((s) => s.traceId === line.traceId && s.name === 'storage list');
      assert.equal(storage.parentSpanId, http.spanId);
    });

    it('names an unmatched request by its method alone, and a 4xx is not an error', async () => {
      assert.equal((await call(`${server.url}/no-such-path`)).status, 404);
      const line = await requestLine(server, (l) => l.url === '/no-such-path');
      const http = await receiver.find((s) => s.traceId === line.traceId);
      assert.equal(http.name, 'GET');
      assert.equal(http.attributes['http.route'], undefined);
      assert.equal(http.attributes['http.response.status_code'], 404);
      assert.notEqual(http.status.code, STATUS_ERROR);
    });

    it('marks a 5xx as an error, with error.type and the exception', async () => {
      // A JWT whose key cannot be fetched (the JWKS URL is dead): 503.
      const header = Buffer.from('{"alg":"ES256","kid":"gone"}').toString('base64url');
      const payload = Buffer.from('{"sub":"someone"}').toString('base64url');
      assert.equal((await listPlants(server.url, `${header}.${payload}.c2ln`, '?limit=1')).status, 503);
      const line = await requestLine(server, (l) => l.status === 503);
      const http = await receiver.find((s) => s.traceId === line.traceId);
      assert.equal(http.name, 'GET /plants');
      assert.equal(http.status.code, STATUS_ERROR);
      assert.equal(http.attributes['error.type'], '503');
      assert.equal(http.attributes['http.response.status_code'], 503);
      assert.ok(http.events.some((e) => e.name === 'exception'));
    });

    it('ends the span of a request the client abandons, as aborted', async () => {
      const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(
        `POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":`,
      );
      await sleep(300); // the server has the headers and waits for the rest of the body
      socket.destroy();
      const http = await receiver.find((s) => s.name === 'POST /plants' && s.attributes['error.type'] === 'aborted');
      assert.equal(http.attributes['http.response.status_code'], undefined);
    });
  });
}

describe('traces with --workers 2: each worker exports its own spans', () => {
  let receiver: OtlpReceiver;
  let store: Awaited<ReturnType<Engine['fresh']>>;
  let server: RunningServer;
  before(async () => {
    receiver = await new OtlpReceiver().start();
    store = await sqlite.fresh();
    const env = tracedEnv(receiver, { OTEL_SERVICE_NAME: 'plants-eu' });
    server = await startServer({ database: store.url, args: ['--workers', '2'], env });
    await untilListening(server, 2);
  });
  after(async () => {
    await server.stop();
    await store.drop();
    await receiver.stop();
  });

  it('spans arrive from two processes, under the OTEL_SERVICE_NAME given', async () => {
    for (let i = 0; i < 10; i++) await getOnNewConnection(`${server.url}/healthz`);
    const pids = () => new Set(receiver.spans.map((span) => span.resource['process.pid']));
    await eventually(
      () => `spans from 2 processes (from ${[...pids()].join(', ')})`,
      () => pids().size >= 2 || undefined,
      20_000,
      50,
    );
    assert.equal(pids().size, 2, `spans from ${[...pids()].join(', ')}`);
    assert.ok(receiver.spans.every((s) => s.resource['service.name'] === 'plants-eu'));
  });
});

describe('traces: a receiver that is down', () => {
  it('is reported once when exports fail and once when they work again, requests served meanwhile', async () => {
    const port = await freePort();
    const store = await sqlite.fresh();
    const receiver = new OtlpReceiver();
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
    };
    const server = await startServer({ database: store.url, env });
    const waitForLine = async (text: string) => {
      for (let i = 0; i < 400 && !server.output().includes(text); i++) {
        assert.equal((await call(`${server.url}/healthz`)).status, 200);
        await sleep(50);
      }
      return server.output().split(text).length - 1;
    };
    try {
      assert.equal(await waitForLine('traces: export failed'), 1);
      await receiver.start(port);
      assert.equal(await waitForLine('traces: export works again'), 1);
      await receiver.find((s) => s.name === 'GET /healthz');
      assert.equal(server.output().split('traces: export failed').length - 1, 1);
    } finally {
      await server.stop();
      await store.drop();
      await receiver.stop();
    }
  });

  it('does not hold a stop: the last spans are given up after 3 s, exit 0', async () => {
    const store = await sqlite.fresh();
    try {
      const env = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await freePort()}` };
      const server = await startServer({ database: store.url, env });
      assert.equal((await call(`${server.url}/healthz`)).status, 200);
      const stopping = Date.now();
      assert.equal(await server.stop(), 0);
      assert.ok(Date.now() - stopping < 9_000, `stopped in ${Date.now() - stopping} ms`);
      assert.match(server.output(), /traces: the last spans were not exported within 3000 ms/);
    } finally {
      await store.drop();
    }
  });
});

describe('traces: spans still buffered are exported on graceful shutdown', () => {
  it('SIGTERM exports the last spans, then exits 0', async () => {
    const receiver = await new OtlpReceiver().start();
    const store = await sqlite.fresh();
    try {
      // A batch every 10 minutes: only the shutdown flush can send this span in time.
      const env = tracedEnv(receiver, { OTEL_BSP_SCHEDULE_DELAY: '600000' });
      const server = await startServer({ database: store.url, env });
      assert.equal((await postPlant(server.url, server.firstToken!, { id: 7, name: 'Ivy' })).status, 200);
      await sleep(500);
      assert.equal(receiver.spans.length, 0);
      assert.equal(await server.stop(), 0);
      assert.ok(receiver.spans.some((s) => s.name === 'POST /plants'));
      assert.ok(receiver.spans.some((s) => s.name === 'storage insert'));
    } finally {
      await store.drop();
      await receiver.stop();
    }
  });
});

describe('traces off: no OpenTelemetry package is loaded, no traceId in the log', () => {
  let dir: string;
  before(() => {
    // Records every module the server resolves that comes from @opentelemetry (a loader hook).
    dir = mkdtempSync(join(tmpdir(), 'plant-store-traces-'));
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.includes('/@opentelemetry/')) appendFileSync(process.env.MODULE_LOG, result.url + '\\n');
  return result;
}
`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister('./hooks.mjs', import.meta.url);\n`,
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function opentelemetryModulesLoaded(env: Record<string, string>): Promise<{ modules: string[]; logs: string }> {
    const log = join(dir, `modules-${Math.random()}.log`);
    writeFileSync(log, '');
    const store = await sqlite.fresh();
    try {
      const server = await startServer({
        database: store.url,
        env: { NODE_OPTIONS: `--import=${join(dir, 'register.mjs')}`, MODULE_LOG: log, ...env },
      });
      await postPlant(server.url, server.firstToken!, { id: 1, name: 'Moss' });
      await listPlants(server.url, server.firstToken!, '?limit=5');
      await server.stop();
      return { modules: readFileSync(log, 'utf8').split('\n').filter(Boolean), logs: server.output() };
    } finally {
      await store.drop();
    }
  }

  it('without OTEL_EXPORTER_OTLP_ENDPOINT: not one @opentelemetry module, and log lines without traceId', async () => {
    const { modules, logs } = await opentelemetryModulesLoaded({});
    assert.deepEqual(modules, []);
    const lines = logs.split('\n').filter((line) => line.includes('"msg":"request"'));
    assert.equal(lines.length, 2);
    assert.ok(lines.every((line) => !line.includes('traceId')));
  });

  it('(the same check sees them when the endpoint is set)', async () => {
    const receiver = await new OtlpReceiver().start();
    try {
      const { modules } = await opentelemetryModulesLoaded(tracedEnv(receiver));
      assert.ok(modules.some((url) => url.includes('/@opentelemetry/sdk-trace-node/')));
    } finally {
      await receiver.stop();
    }
  });
});

describe('trace settings the exporter cannot use are refused at start (exit 2, naming the setting)', () => {
  for (const [name, value] of [
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'http/protobuf'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
  ] as const) {
    it(`${name}=${value}`, () => {
      const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', [name]: value };
      const result = runCli(['serve', '--port', '0', '--database', 'sqlite::memory:'], env);
      assert.equal(result.status, 2);
      assert.match(result.stderr, new RegExp(`^plant-store: error: ${name}=${value}: `));
    });
  }
});
