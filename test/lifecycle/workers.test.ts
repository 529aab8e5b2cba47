import assert from 'node:assert/strict';
import { get } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sqlite } from '../helpers/engines.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { workerPids } from '../helpers/proc.js';
import { createToken, runCli, startServer, untilListening, type RunningServer } from '../helpers/server.js';

/** A GET on a connection of its own (so that the cluster hands it to the next worker in turn). */
function getAlone(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) =>
    get(url, { agent: false }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, text }));
    }).on('error', reject),
  );
}

/** The value of one series in a scrape of /metrics, 0 when absent. */
function seriesValue(scrape: string, series: string): number {
  const line = scrape.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

const HEALTHZ_COUNT = 'plant_store_http_requests_total{method="GET",route="/healthz",status="200"}';
const HEALTHZ_HISTOGRAM_COUNT =
  'plant_store_http_request_duration_seconds_count{method="GET",route="/healthz",status="200"}';

describe('--workers 2: two processes serve one port on one SQLite store', () => {
  let store: Awaited<ReturnType<typeof sqlite.fresh>>;
  let server: RunningServer;
  before(async () => {
    store = await sqlite.fresh();
    // At debug, so that the request lines of /healthz (a probe, logged at debug) tell the workers apart.
    server = await startServer({ database: store.url, args: ['--workers', '2', '--log-level', 'debug'] });
    // Both workers print "listening"; wait until both are up.
    await untilListening(server, 2);
  });
  after(async () => {
    await server.stop();
    await store.drop();
  });

  it('runs two workers', () => {
    assert.equal(workerPids(server).length, 2);
  });

  it('shows one view of all workers on /metrics: every scrape counts the requests both served', async () => {
    const requests = 20;
    for (let i = 0; i < requests; i++) assert.equal((await getAlone(`${server.url}/healthz`)).status, 200);
    await sleep(300); // request log lines are written every 100 ms
    const servedBy = new Set(
      server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"url":"/healthz"'))
        .map((line) => (JSON.parse(line) as { pid: number }).pid),
    );
    assert.equal(servedBy.size, 2, 'both workers served some of them');
    // Each scrape is answered by one worker or the other, and shows the same total.
    for (let i = 0; i < 4; i++) {
      const scrape = (await getAlone(`${server.url}/metrics`)).text;
      assert.equal(seriesValue(scrape, HEALTHZ_COUNT), requests, scrape);
      assert.equal(seriesValue(scrape, HEALTHZ_HISTOGRAM_COUNT), requests);
      assert.match(
        scrape,
        /plant_store_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/healthz",status="200"\} 20\n/,
      );
      // Per-process figures stay apart, one series per worker.
      const workers = scrape.match(/^process_resident_memory_bytes\{worker="\d+"\} \d+$/gm) ?? [];
      assert.equal(workers.length, 2, scrape);
      assert.equal((scrape.match(/^nodejs_eventloop_lag_p99_seconds\{worker="\d+"\} [\d.e-]+$/gm) ?? []).length, 2);
    }
  });

  it('keeps the API correct across workers: writes through one are read through the other', async () => {
    const { token } = await createToken(store.url, 'spread');
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) => postPlant(server.url, token, { id: i, name: `p${i}` })),
    );
    assert.deepEqual([...new Set(replies.map((r) => r.status))], [200]);
    for (let i = 0; i < 6; i++) {
      const plants = (await listPlants(server.url, token)).json as unknown[];
      assert.equal(plants.length, 40);
    }
    assert.equal((await postPlant(server.url, token, { id: 1, name: 'other' })).status, 409);
  });

  it('sees tokens created and revoked through the CLI within 1 second on every worker', async () => {
    const created = await createToken(store.url, 'revocable');
    const ok = await Promise.all(Array.from({ length: 10 }, () => listPlants(server.url, created.token)));
    assert.deepEqual([...new Set(ok.map((r) => r.status))], [200]);
    assert.equal(runCli(['token', 'revoke', created.id, '--database', store.url]).status, 0);
    await sleep(1_000);
    const refused = await Promise.all(Array.from({ length: 10 }, () => listPlants(server.url, created.token)));
    assert.deepEqual([...new Set(refused.map((r) => r.status))], [401]);
  });

  it('replaces a worker that dies, and its counts stay in the sums', async () => {
    const counted = seriesValue((await getAlone(`${server.url}/metrics`)).text, HEALTHZ_COUNT);
    assert.ok(counted >= 20);
    const [victim] = workerPids(server);
    process.kill(victim!, 'SIGKILL');
    let pids: number[] = [];
    for (let i = 0; i < 60; i++) {
      await sleep(100);
      pids = workerPids(server);
      if (pids.length === 2 && !pids.includes(victim!)) break;
    }
    assert.equal(pids.length, 2);
    assert.ok(!pids.includes(victim!));
    await sleep(500);
    assert.equal((await listPlants(server.url, server.firstToken!)).status, 200);
    // A sum that went down would read as a counter reset to Prometheus.
    for (let i = 0; i < 2; i++) {
      assert.equal(seriesValue((await getAlone(`${server.url}/metrics`)).text, HEALTHZ_COUNT), counted);
    }
  });

  it('exits 0 on SIGTERM, workers included, the primary\'s "stopped" line last', async () => {
    const pids = workerPids(server);
    assert.equal(await server.stop('SIGTERM'), 0);
    for (const pid of pids) assert.throws(() => process.kill(pid, 0));
    const lines = server
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { pid: number; msg: string });
    assert.deepEqual(lines.at(-1), { ...lines.at(-1), pid: server.process.pid, msg: 'stopped' });
    assert.equal(lines.filter((line) => line.msg === 'stopped').length, 3, server.stdout());
    assert.doesNotMatch(server.stderr(), /worker \d+ exited/);
  });
});

describe('--workers 2: SIGTERM drains every worker, then stops them', () => {
  it('answers /readyz 503 from both workers at once while still serving, then exits 0 after the delay', async () => {
    const store = await sqlite.fresh();
    try {
      const server = await startServer({ database: store.url, args: ['--workers', '2', '--shutdown-delay', '2s'] });
      await untilListening(server, 2);
      const signalAt = Date.now();
      const exit = server.stop('SIGTERM');
      await sleep(300);
      // Connections of their own, handed to the workers in turn: every one is refused readiness and
      // every one is served.
      for (let i = 0; i < 4; i++) {
        assert.equal((await getAlone(`${server.url}/readyz`)).status, 503);
        assert.equal((await getAlone(`${server.url}/healthz`)).status, 200);
      }
      assert.equal(await exit, 0, server.output());
      const took = Date.now() - signalAt;
      assert.ok(took >= 2_000 && took < 6_000, `exited ${took} ms after the signal`);
    } finally {
      await store.drop();
    }
  });
});
