import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { DELIVERY_THREAD_NICENESS } from '../../src/webhooks/delivery-types.js';
import { DEFAULTS } from '../../src/config.js';
import { DeliveryThread } from '../../src/webhooks/delivery-thread.js';
import { AttemptCounts } from '../../src/webhooks/attempt-counts.js';
import { testApp } from '../helpers/app.js';
import { ENGINES } from '../helpers/engines.js';
import { postPlant } from '../helpers/http.js';
import { registerEndpoint } from '../helpers/webhooks.js';

/**
 * A receiver in a process of its own, so that it answers while the test holds its own event loop:
 * it appends the time each request arrived to a file, which the held loop can read.
 */
async function receiverProcess(arrivals: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [
    '-e',
    `const file = ${JSON.stringify(arrivals)};
     require('node:http').createServer((q, s) => { require('node:fs').appendFileSync(file, Date.now() + '\\n'); q.resume(); q.on('end', () => s.end()); })
       .listen(0, '127.0.0.1', function () { console.log(this.address().port); });`,
  ]);
  const [port] = await once(createInterface({ input: child.stdout! }), 'line');
  return { url: `http://127.0.0.1:${port}/hook`, child };
}

/** The arrival times the receiver wrote so far. */
function arrived(arrivals: string): number[] {
  return existsSync(arrivals) ? readFileSync(arrivals, 'utf8').trim().split('\n').map(Number) : [];
}

/** Holds this thread (the event loop), as a long synchronous task would, until `done()` or `limitMs`. */
function holdUntil(done: () => boolean, limitMs: number) {
  const end = Date.now() + limitMs;
  while (!done() && Date.now() < end);
}

/** The nice value of each thread of this process (Linux: field 19 of /proc/self/task/<id>/stat). */
function threadNiceness(): number[] {
  return readdirSync('/proc/self/task').map((id) => {
    const stat = readFileSync(`/proc/self/task/${id}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

const linux = process.platform === 'linux';
/** Far longer than a delivery takes (the thread polls every 250 ms), even on a busy machine. */
const HOLD_LIMIT_MS = 20_000;

for (const engine of ENGINES) {
  describe(`webhook deliveries run in a thread of their own (${engine.name})`, () => {
    const receivers: ChildProcess[] = [];
    after(() => {
      for (const child of receivers) child.kill();
    });

    it('sends an event while the event loop is held by something else', async () => {
      const t = await testApp(engine);
      const arrivals = join(mkdtempSync(join(tmpdir(), 'plant-store-arrivals-')), 'arrivals');
      try {
        await t.app.listen({ port: 0, host: '127.0.0.1' });
        const base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
        const token = await t.token('threaded');
        const receiver = await receiverProcess(arrivals);
        receivers.push(receiver.child);
        await registerEndpoint(base, token, { url: receiver.url });
        assert.equal((await postPlant(base, token, '{"id": 1, "name": "Fern"}')).status, 200);
        const heldFrom = Date.now();
        holdUntil(() => arrived(arrivals).length > 0, HOLD_LIMIT_MS);
        const heldFor = Date.now() - heldFrom;
        assert.equal(arrived(arrivals).length, 1, `the event arrived while the loop was held (${heldFor} ms)`);
      } finally {
        await t.close();
        rmSync(dirname(arrivals), { recursive: true, force: true });
      }
    });

    it(
      'runs at a lower priority (nice 5), so the API comes first on a shared core',
      { skip: !linux && 'Linux only' },
      async () => {
        const before = threadNiceness().filter((nice) => nice === DELIVERY_THREAD_NICENESS).length;
        const t = await testApp(engine);
        try {
          await t.app.listen({ port: 0, host: '127.0.0.1' });
          const deadline = Date.now() + 10_000;
          while (
            threadNiceness().filter((nice) => nice === DELIVERY_THREAD_NICENESS).length === before &&
            Date.now() < deadline
          ) {
            await sleep(100);
          }
          assert.equal(threadNiceness().filter((nice) => nice === DELIVERY_THREAD_NICENESS).length, before + 1);
          assert.ok(
            threadNiceness().some((nice) => nice === 0),
            'the event loop keeps its priority',
          );
        } finally {
          await t.close();
        }
        assert.equal(
          threadNiceness().filter((nice) => nice === DELIVERY_THREAD_NICENESS).length,
          before,
          'the thread ended with the app',
        );
      },
    );
  });
}

describe('a delivery thread that ends unasked is started again', () => {
  it('logs the failure and starts a new thread a second later (here a store it cannot open)', async () => {
    const errors: string[] = [];
    const log = {
      warn: () => {},
      error: (_fields: Record<string, unknown>, message: string) => errors.push(message),
    };
    const thread = new DeliveryThread(
      { engine: 'sqlite', path: '/nonexistent-directory/store.db' },
      {
        settings: {
          timeoutMs: DEFAULTS.webhookTimeout,
          retrySchedule: DEFAULTS.webhookRetrySchedule,
          concurrency: DEFAULTS.webhookConcurrency,
          endpointConcurrency: DEFAULTS.webhookEndpointConcurrency,
          retentionMs: DEFAULTS.webhookRetention,
        },
        allowPrivate: false,
        log,
        attempts: new AttemptCounts(),
        server: createServer(),
      },
    );
    thread.start();
    const failures = () => errors.filter((message) => message.includes('the delivery thread failed')).length;
    // A thread starts in a second or two under tsx on a busy machine; then the next a second later.
    const deadline = Date.now() + 30_000;
    while (failures() < 2 && Date.now() < deadline) await sleep(100);
    await thread.stop();
    assert.ok(failures() >= 2, `${failures()} threads failed: ${errors.join(' | ')}`);
    assert.ok(errors.some((message) => message.includes('starting it again')));
  });
});
