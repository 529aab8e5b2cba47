import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sqlitePath } from '../../src/storage/sqlite/index.js';
import { ENGINES, withFreshStore } from '../helpers/engines.js';
import { call, postPlant } from '../helpers/http.js';
import { createToken, startServer } from '../helpers/server.js';

const OPEN = new URL('../../dist/storage/open.js', import.meta.url).href;

/**
 * `--sqlite-writer thread` (storage/sqlite/writer-thread.ts): while a commit waits for another
 * process's write lock, the server goes on answering. `inline`, the old way, is the control: there
 * the same wait holds the event loop, which shows that the test measures the thread's doing.
 */

const LOCK_HELD_MS = 1_000;
/** When the health check is sent: the POST has long reached its commit, which waits for the lock. */
const PROBE_AT_MS = 250;

/** How long GET /healthz takes while another connection holds the write lock during a POST. */
async function healthDuringLockedCommit(database: string, writer: 'thread' | 'inline') {
  const server = await startServer({ database, args: ['--sqlite-writer', writer] });
  const lock = new Database(sqlitePath(database));
  try {
    const { token } = await createToken(database, 'locked');
    assert.equal((await postPlant(server.url, token, { id: 1, name: 'warm' })).status, 200);
    lock.exec('BEGIN IMMEDIATE'); // another process's write transaction, held open
    const released = sleep(LOCK_HELD_MS).then(() => lock.exec('COMMIT'));
    const post = postPlant(server.url, token, { id: 2, name: 'waited for the lock' });
    await sleep(PROBE_AT_MS);
    const sent = performance.now();
    const health = await call(`${server.url}/healthz`);
    const healthMs = performance.now() - sent;
    await released;
    return { health, healthMs, post: await post };
  } finally {
    if (lock.inTransaction) lock.exec('ROLLBACK');
    lock.close();
    await server.stop();
  }
}

for (const engine of ENGINES.filter((e) => e.name === 'sqlite')) {
  describe('a commit waiting for another process to release the write lock does not hold up other requests', () => {
    it('answers GET /healthz at once with --sqlite-writer thread, and the POST once the lock is free', async () => {
      await withFreshStore(engine, async (database) => {
        const { health, healthMs, post } = await healthDuringLockedCommit(database, 'thread');
        assert.equal(health.status, 200);
        assert.ok(healthMs < 100, `GET /healthz took ${healthMs.toFixed(0)} ms`);
        assert.equal(post.status, 200, post.text);
      });
    });

    it('holds GET /healthz until the lock is free with --sqlite-writer inline (the control)', async () => {
      await withFreshStore(engine, async (database) => {
        const { health, healthMs, post } = await healthDuringLockedCommit(database, 'inline');
        assert.equal(health.status, 200);
        assert.ok(healthMs > (LOCK_HELD_MS - PROBE_AT_MS) / 2, `GET /healthz took only ${healthMs.toFixed(0)} ms`);
        assert.equal(post.status, 200, post.text);
      });
    });
  });

  describe('the writer thread does not keep the process alive once the store is closed', () => {
    it('lets a script that writes and closes exit by itself', async () => {
      await withFreshStore(engine, async (database) => {
        const script = `
          const { openStorage } = await import(${JSON.stringify(OPEN)});
          const storage = await openStorage(${JSON.stringify(database)});
          const change = { kind: 'create', account: 'a', plant: { id: 1n, name: 'x', tag: null, revision: 1n }, eventId: 'e' };
          const [outcome] = await storage.applyChanges([change]);
          await storage.close();
          console.log(outcome.status);`;
        const file = join(dirname(sqlitePath(database)), 'close.mjs');
        writeFileSync(file, script);
        const run = spawnSync(process.execPath, [file], {
          encoding: 'utf8',
          timeout: 10_000,
        });
        assert.equal(run.status, 0, run.stderr);
        assert.equal(run.stdout, 'applied\n');
      });
    });
  });
}
