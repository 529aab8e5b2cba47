import assert from 'node:assert/strict';
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import { describe, it } from 'node:test';
import { sqlite } from '../helpers/engines.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { assertErrorBody, parseResponses } from '../helpers/raw-http.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { scaled } from '../helpers/load.js';
import { eventually } from '../helpers/wait.js';
import { openSockets } from '../helpers/proc.js';

/**
 * Slow and hostile clients: the time-outs the server sets (src/app.ts) hold, the server keeps
 * answering everyone else meanwhile, and every socket such a client held is freed.
 *
 *   headersTimeout 10 s    the request line and headers must arrive within 10 s (slowloris)
 *   requestTimeout 30 s    the whole request, body included, within 30 s
 *   keepAliveTimeout 5 s   an idle kept-alive connection is closed after 5 s
 *   connectionTimeout 60 s a socket with no traffic at all, whatever its state
 *
 * Node enforces the first two from a periodic check, set to every second. The tests wait for
 * the real values, so they take about 31 s (they run side by side). They use the SQLite store:
 * nothing here reaches storage beyond a token lookup.
 */

const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** The periodic check (1 s), plus scheduling slack on a busy test machine. */
const SLACK_MS = 2_500;

const SLOWLORIS = scaled(20, 200);
const IDLE = scaled(500, 5_000);
const KEPT_ALIVE = scaled(100, 1_000);

interface Ended {
  /** Milliseconds from the established connection until the server closed it. */
  afterMs: number;
  data: Buffer;
  /** True when the server closed it; false when the test gave up. */
  byServer: boolean;
}

/** A client that sends `first`, then `drip` every `everyMs` (if given) until the server closes it. */
function slowClient(port: number, first: string, drip?: string, everyMs = 1_000, giveUpMs = 70_000): Promise<Ended> {
  return new Promise((resolve) => {
    let started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    let byServer = true;
    const giveUp = setTimeout(() => {
      byServer = false;
      socket.destroy();
    }, giveUpMs);
    socket.on('connect', () => {
      started = Date.now();
      if (first !== '') socket.write(first);
      if (drip !== undefined) {
        const send = () => {
          if (!socket.writable) return;
          socket.write(drip);
          timer = setTimeout(send, everyMs);
        };
        timer = setTimeout(send, everyMs);
      }
    });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      clearTimeout(giveUp);
      resolve({ afterMs: Date.now() - started, data: Buffer.concat(chunks), byServer });
    });
  });
}

/** Opens `count` connections a few hundred at a time (the listen backlog is 511). */
async function openInBatches(count: number, open: () => Promise<Ended>): Promise<Array<Promise<Ended>>> {
  const all: Array<Promise<Ended>> = [];
  for (let i = 0; i < count; i += 250) {
    all.push(...Array.from({ length: Math.min(250, count - i) }, open));
    await sleep(50);
  }
  return all;
}

/**
 * Well-behaved traffic while the hostile clients are connected: a create and a list every 100 ms.
 * It runs in a worker thread, with an event loop of its own: the thousands of hostile sockets this
 * test process holds (and sees closed all at once) would otherwise stall the measuring client
 * itself, and its slowest answer would be the test's own pause rather than the server's.
 * Returns a function that stops it and reports the slowest answer.
 */
const WELL_BEHAVED = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, token } = workerData;
let running = true;
let slowest = 0;
let answered = 0;
const failures = [];
parentPort.once('message', () => { running = false; });
(async () => {
  let id = 1;
  while (running) {
    const started = Date.now();
    try {
      const created = await fetch(url + '/plants', {
        method: 'POST',
        headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
        body: JSON.stringify({ id: id++, name: 'well-behaved' }),
      });
      await created.text();
      const listed = await fetch(url + '/plants?limit=1', { headers: { authorization: 'Bearer ' + token } });
      await listed.text();
      if (created.status !== 200 || listed.status !== 200) failures.push(created.status + '/' + listed.status);
      answered++;
    } catch (error) {
      failures.push(error.message);
    }
    slowest = Math.max(slowest, Date.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  parentPort.postMessage({ slowest, answered, failures });
})();
`;

function keepServing(server: RunningServer, token: string) {
  const worker = new Worker(WELL_BEHAVED, { eval: true, workerData: { url: server.url, token } });
  const report = new Promise<{ slowest: number; answered: number; failures: string[] }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  let stopped: Promise<{ slowest: number; answered: number; failures: string[] }> | undefined;
  return () => {
    stopped ??= (async () => {
      worker.postMessage('stop');
      const result = await report;
      await worker.terminate();
      return result;
    })();
    return stopped;
  };
}

/** The server's open sockets, once the fetch pool's idle ones are gone (files the store's threads open later are not counted). */
/** Waits until the server holds at most `atMost` sockets, failing with `what` and the count it last saw. */
async function socketsFreed(server: RunningServer, atMost: number, withinMs: number, what: string): Promise<void> {
  const pid = server.process.pid!;
  let open = openSockets(pid);
  await eventually(
    () => `${what}: at most ${atMost} open sockets, ${open} still open`,
    () => ((open = openSockets(pid)) <= atMost ? true : undefined),
    withinMs,
  );
}

function assertTimeoutAnswer(ended: Ended, what: string) {
  const responses = parseResponses(ended.data);
  assert.equal(responses.length, 1, `${what}: one answer, then the connection is closed`);
  const [response] = responses;
  assert.equal(response!.status, 408, `${what}: 408 Request Timeout`);
  assertErrorBody(408, response!.headers['content-type'], response!.body.toString(), what);
  assert.equal(
    response!.headers['x-content-type-options'],
    'nosniff',
    `${what}: the security headers are on this answer too`,
  );
}

/** A server of its own, its socket count at rest, and well-behaved traffic that stops with the test. */
async function serverFor(t: { after: (fn: () => Promise<unknown>) => void }) {
  const { url: database, drop } = await sqlite.fresh();
  const server = await startServer({ database });
  const baseline = openSockets(server.process.pid!);
  const stop = keepServing(server, server.firstToken!);
  t.after(async () => {
    await stop();
    await server.stop('SIGKILL');
    await drop();
  });
  return { server, port: Number(new URL(server.url).port), token: server.firstToken!, baseline, stop };
}

describe(
  'slow and hostile clients are cut off by the time-outs while everyone else is served',
  { concurrency: true },
  () => {
    it(`slowloris: ${SLOWLORIS} clients sending a header line a second are answered 408 and dropped at the 10 s headers time-out`, async (t) => {
      const { server, port, baseline, stop } = await serverFor(t);
      const ended = await Promise.all(
        Array.from({ length: SLOWLORIS }, (_, i) =>
          slowClient(port, `GET /plants HTTP/1.1\r\nHost: x\r\n`, `X-Slow-${i}: still coming\r\n`),
        ),
      );
      const served = await stop();
      for (const e of ended) {
        assert.ok(e.byServer, 'the server closed the connection');
        assert.ok(e.afterMs >= HEADERS_TIMEOUT_MS - 100, `not before the headers time-out (${e.afterMs} ms)`);
        assert.ok(e.afterMs <= HEADERS_TIMEOUT_MS + SLACK_MS, `within the headers time-out (${e.afterMs} ms)`);
        assertTimeoutAnswer(e, 'slowloris');
      }
      assert.deepEqual(served.failures, [], 'everyone else was served');
      t.diagnostic(`well-behaved client: ${served.answered} rounds, slowest ${served.slowest} ms`);
      assert.ok(served.slowest < 2_000, `everyone else was served promptly (slowest ${served.slowest} ms)`);
      await socketsFreed(server, baseline + 2, 8_000, 'the sockets are freed');
    });

    it('a request body that never finishes is answered 408 and dropped at the 30 s request time-out', async (t) => {
      const { server, port, token, baseline, stop } = await serverFor(t);
      const head = (auth: boolean) =>
        'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n' +
        (auth ? `Authorization: Bearer ${token}\r\n` : '') +
        '\r\n{"id": 777, "name": "never';
      const [dripping, stalled, unauthorised] = await Promise.all([
        slowClient(port, head(true), ' '), // a byte a second: never idle, never done
        slowClient(port, head(true)), // then silence
        slowClient(port, head(false), ' '), // refused at once (401), body still dripping
      ]);
      const served = await stop();
      for (const [e, what] of [
        [dripping, 'dripping body'],
        [stalled, 'stalled body'],
      ] as const) {
        assert.ok(e.byServer, `${what}: the server closed the connection`);
        assert.ok(e.afterMs >= REQUEST_TIMEOUT_MS - 100, `${what}: not before the request time-out (${e.afterMs} ms)`);
        assert.ok(e.afterMs <= REQUEST_TIMEOUT_MS + SLACK_MS, `${what}: within the request time-out (${e.afterMs} ms)`);
        assertTimeoutAnswer(e, what);
      }
      // The refusal came first; at the time-out the connection is closed without a second answer.
      assert.ok(
        unauthorised.byServer && unauthorised.afterMs <= REQUEST_TIMEOUT_MS + SLACK_MS,
        'the refused slow body is dropped too',
      );
      const refusal = parseResponses(unauthorised.data);
      assert.deepEqual(
        refusal.map((r) => r.status),
        [401],
        'exactly one answer (401) on the refused connection, no stray 408 after it',
      );
      const listed = await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } });
      assert.ok(!(await listed.text()).includes('never'), 'nothing of an unfinished body was stored');
      assert.deepEqual(served.failures, [], 'everyone else was served');
      t.diagnostic(`well-behaved client: ${served.answered} rounds, slowest ${served.slowest} ms`);
      assert.ok(served.slowest < 2_000, `everyone else was served promptly (slowest ${served.slowest} ms)`);
      await socketsFreed(server, baseline + 2, 8_000, 'the sockets are freed');
    });

    it(`${IDLE} connections that never send a byte are dropped at the headers time-out; ${KEPT_ALIVE} idle kept-alive ones at the 5 s keep-alive time-out`, async (t) => {
      const { server, port, baseline, stop } = await serverFor(t);
      const silent = await openInBatches(IDLE, () => slowClient(port, ''));
      const keptAlive = await openInBatches(KEPT_ALIVE, () =>
        slowClient(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      const pid = server.process.pid!;
      await eventually(
        `the server holds all ${IDLE} silent connections at once`,
        () => (openSockets(pid) >= baseline + IDLE ? true : undefined),
        5_000,
      );

      for (const e of await Promise.all(keptAlive)) {
        assert.ok(e.byServer, 'the server closed the kept-alive connection');
        assert.ok(
          e.afterMs <= KEEP_ALIVE_TIMEOUT_MS + SLACK_MS,
          `kept-alive connection closed at the keep-alive time-out (${e.afterMs} ms)`,
        );
        assert.deepEqual(
          parseResponses(e.data).map((r) => r.status),
          [200],
          'its one request was answered',
        );
      }
      for (const e of await Promise.all(silent)) {
        assert.ok(e.byServer, 'the server closed the silent connection');
        assert.ok(
          e.afterMs <= HEADERS_TIMEOUT_MS + SLACK_MS,
          `silent connection closed at the headers time-out (${e.afterMs} ms)`,
        );
      }
      const served = await stop();
      assert.deepEqual(served.failures, [], 'everyone else was served');
      t.diagnostic(`well-behaved client: ${served.answered} rounds, slowest ${served.slowest} ms`);
      assert.ok(served.slowest < 2_000, `everyone else was served promptly (slowest ${served.slowest} ms)`);
      await socketsFreed(server, baseline + 2, 8_000, `the ${IDLE + KEPT_ALIVE} sockets are freed`);
    });
  },
);
