import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { threadCpuMicros } from '../../src/telemetry/thread-cpu.js';
import { apiSaturation } from '../../src/webhooks/delivery-thread.js';

/** Keeps the event loop busy for `ms`, as a saturated API would. */
function spin(ms: number) {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

describe('the API counts as saturated only while requests arrive and the event loop is busy', () => {
  const server = http.createServer((_request, response) => response.end('ok'));
  let url = '';
  let apiBusy: () => boolean;
  /** One request, answered before anyone asks: as group commit answers a whole batch in one turn. */
  const answered = async () => (await fetch(url)).text();

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    apiBusy = apiSaturation(server);
    await sleep(250);
    apiBusy();
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  it('is saturated when requests arrived and the loop was busy, even if none is in flight when asked', async () => {
    await answered();
    spin(300);
    assert.equal(apiBusy(), true);
  });

  it('is not saturated when the loop was busy with no request arriving (the deliverer itself, say)', () => {
    spin(300);
    assert.equal(apiBusy(), false);
  });

  it('is not saturated when requests arrive at a pace the process keeps up with', async () => {
    await answered();
    await sleep(300);
    assert.equal(apiBusy(), false);
  });

  it('keeps its answer until the window of 200 ms is over', async () => {
    await answered();
    spin(300);
    assert.equal(apiBusy(), true);
    assert.equal(apiBusy(), true, 'asked again at once: the same window');
  });
});

/** Threads that each hold a core for `ms` when told, as a writer thread or the delivery thread would; each says its kernel id. */
async function spinners(count: number) {
  const code = `const { parentPort } = require('node:worker_threads');
    const { readlinkSync } = require('node:fs');
    parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));
    parentPort.on('message', (ms) => { const end = Date.now() + ms; while (Date.now() < end); parentPort.postMessage('done'); });`;
  const workers = Array.from({ length: count }, () => new Worker(code, { eval: true }));
  const ids = await Promise.all(workers.map((w) => new Promise<number>((resolve) => w.once('message', resolve))));
  return {
    ids,
    spin: (ms: number) =>
      Promise.all(
        workers.map((w) => {
          const done = new Promise((resolve) => w.once('message', resolve));
          w.postMessage(ms);
          return done;
        }),
      ),
    stop: () => Promise.all(workers.map((w) => w.terminate())),
  };
}

describe(
  'the API counts as saturated when its threads fill the cores the process may use, though its event loop waits',
  { skip: process.platform !== 'linux' && 'Linux only (thread ids)' },
  () => {
    const server = http.createServer((_request, response) => response.end('ok'));
    let url = '';
    let threads: Awaited<ReturnType<typeof spinners>>;
    before(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      threads = await spinners(2);
    });
    after(async () => {
      await threads.stop();
      await new Promise((resolve) => server.close(resolve));
    });

    /** Requests arrive while the threads hold every core and the event loop only waits for them. */
    async function windowOfThreadWork(apiBusy: () => boolean) {
      await sleep(250);
      apiBusy();
      await (await fetch(url)).text();
      await threads.spin(300);
      return apiBusy();
    }

    // Two threads against half a core: the process counts as using its cores fully even where
    // other work (other tests) takes most of the machine.
    it("is saturated when the threads are the API's (a writer thread's commits)", async () => {
      assert.equal(await windowOfThreadWork(apiSaturation(server, () => 0, 0.5)), true);
    });

    it('is not saturated when the threads are the work beside the API (the delivery thread)', async () => {
      const besideTheApi = () => threads.ids.reduce((sum, id) => sum + threadCpuMicros(id), 0);
      assert.equal(await windowOfThreadWork(apiSaturation(server, besideTheApi, 0.5)), false);
    });
  },
);
