import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sqlite } from '../helpers/engines.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { createToken, runCli, startServer, type RunningServer } from '../helpers/server.js';

function workerPids(server: RunningServer): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(server.process.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return [];
  }
}

describe('--workers 2: two processes serve one port on one SQLite store', () => {
  let store: Awaited<ReturnType<typeof sqlite.fresh>>;
  let server: RunningServer;
  before(async () => {
    store = await sqlite.fresh();
    server = await startServer({ database: store.url, args: ['--workers', '2'] });
    // Both workers print "listening"; wait until both are up.
    for (let i = 0; i < 100 && (server.output().match(/Server listening/g) ?? []).length < 2; i++) await sleep(50);
  });
  after(async () => {
    await server.stop();
    await store.drop();
  });

  it('runs two workers', () => {
    assert.equal(workerPids(server).length, 2);
  });

  it('keeps the API correct across workers: writes through one are read through the other', async () => {
    const { token } = createToken(store.url, 'spread');
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
    const created = createToken(store.url, 'revocable');
    const ok = await Promise.all(Array.from({ length: 10 }, () => listPlants(server.url, created.token)));
    assert.deepEqual([...new Set(ok.map((r) => r.status))], [200]);
    assert.equal(runCli(['token', 'revoke', created.id, '--database', store.url]).status, 0);
    await sleep(1_000);
    const refused = await Promise.all(Array.from({ length: 10 }, () => listPlants(server.url, created.token)));
    assert.deepEqual([...new Set(refused.map((r) => r.status))], [401]);
  });

  it('replaces a worker that dies', async () => {
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
  });

  it('exits 0 on SIGTERM, workers included', async () => {
    const pids = workerPids(server);
    assert.equal(await server.stop('SIGTERM'), 0);
    for (const pid of pids) assert.throws(() => process.kill(pid, 0));
  });
});
