import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, rmdirSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { watchReadiness } from '../helpers/readiness.js';
import { FaultLoad } from '../helpers/fault-load.js';
import { metric } from '../helpers/http.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../helpers/wait.js';
import { firstWriteAfter } from '../helpers/pg-faults.js';
import { startServer, type RunningServer } from '../helpers/server.js';

/**
 * Contract: "The embedded store's disk fills up (ENOSPC) ... the write that failed answers 503 with
 * Retry-After and an Error message that says the disk is full; nothing acknowledged is lost and the
 * file stays intact (PRAGMA integrity_check is ok); reads keep being served; /readyz answers 503
 * while writes fail; once space is freed, writes succeed again within 2 s, without a restart."
 *
 * The store lives on a small tmpfs the test mounts (root only), under creates, batches, PATCHes,
 * DELETEs and reads from 8 clients and an open change feed. A filler file takes the rest of the
 * space; later it is removed, and the time until a write succeeds again is measured.
 */

const CLIENTS = 8;
const RECOVERY_LIMIT_MS = 2_000;

/** A tmpfs of `size` mounted on a fresh directory, or the reason it cannot be. */
function mountTmpfs(size: string): { dir: string; unmount: () => void } | { skip: string } {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmdirSync(dir);
    return { skip: `mounting a tmpfs is not permitted here (${String((error as Error).message).trim()})` };
  }
  return {
    dir,
    unmount: () => {
      execFileSync('umount', [dir]);
      rmdirSync(dir);
    },
  };
}

/** Writes `path` until the filesystem refuses (ENOSPC). */
function fillUp(path: string) {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 0xaa);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
}

for (const writer of ['thread', 'inline'] as const) {
  describe(`the embedded store's disk fills up under load (--sqlite-writer ${writer})`, () => {
    const mount = mountTmpfs('8m');
    const skip = 'skip' in mount ? mount.skip : false;
    let server: RunningServer;
    let load: FaultLoad;
    let database = '';
    const filler = 'dir' in mount ? join(mount.dir, 'filler') : '';
    const times = { full: 0, firstRefusal: 0, quietFrom: 0, quietTo: 0, freed: 0, writable: 0, ready: 0 };
    let readiness: ReturnType<typeof watchReadiness>;

    before(async () => {
      if ('skip' in mount) return;
      database = `sqlite:${join(mount.dir, 'store.db')}`;
      server = await startServer({ database, args: ['--sqlite-writer', writer] });
      load = new FaultLoad(server.url, server.firstToken!, CLIENTS);
      readiness = watchReadiness(server.url);
      await load.start();
      await sleep(500);

      fillUp(filler);
      times.full = performance.now();
      // A WAL that a checkpoint had emptied is written again before the file must grow: some
      // writes may still succeed for a moment. Wait for the refusals, then for a steady state.
      while (load.count('create 503') + load.count('batch 503') < 20 && performance.now() - times.full < 10_000) {
        await sleep(20);
      }
      times.firstRefusal = load.writes.find((w) => w.at > times.full && w.status === 503)?.at ?? Number.NaN;
      await sleep(500);
      // No write arrives now: readiness must learn of the disk by itself.
      await load.pause();
      times.quietFrom = performance.now();
      await sleep(700);
      times.quietTo = performance.now();
      load.resume();
      await sleep(300);

      rmSync(filler);
      times.freed = performance.now();
      times.writable = await firstWriteAfter(load, times.freed);
      const readyAgain = () => readiness.between(times.freed, Number.POSITIVE_INFINITY).find((a) => a.status === 200);
      await eventually('/readyz answering 200 after the disk was freed', readyAgain, 15_000, 5);
      times.ready = readyAgain()?.at ?? Number.NaN;
      await sleep(1_000);
      await load.stop();
      await readiness.stop();
    });

    after(async () => {
      if ('skip' in mount) return;
      load?.close();
      await readiness?.stop();
      await server?.stop();
      mount.unmount();
    });

    it('answers the refused writes 503 with Retry-After and a message that says the disk is full', { skip }, () => {
      assert.ok(Number.isFinite(times.firstRefusal), 'writes were refused once the disk was full');
      const statuses = Object.fromEntries(load.statuses);
      for (const key of Object.keys(statuses)) assert.match(key, /^(create|batch|patch|delete|read) (200|204|503)$/);
      assert.ok(load.refusals.size >= 1);
      for (const [body, retryAfter] of load.refusals) {
        assert.deepEqual(JSON.parse(body), {
          error: 503,
          message: "the store's disk is full: writes are refused until space is freed; retry later",
        });
        assert.ok(Number(retryAfter) >= 1, `Retry-After: ${retryAfter}`);
      }
    });

    it('keeps serving reads while the disk is full', { skip }, async () => {
      // The clients' reads all answered 200 (FaultLoad asserts each); and now, a page and a plant.
      assert.ok(load.count('read 200') > 0);
      assert.equal(load.count('read 503'), 0);
    });

    it('answers /readyz 503 while writes fail, with no write arriving, and 200 once they succeed', { skip }, () => {
      const quiet = readiness.between(times.quietFrom, times.quietTo);
      assert.ok(quiet.length >= 5, `${quiet.length} readiness answers while no write arrived`);
      assert.deepEqual([...new Set(quiet.map((a) => a.status))], [503]);
      const beforeFull = readiness.between(0, times.full);
      assert.deepEqual([...new Set(beforeFull.map((a) => a.status))], [200]);
    });

    it(`takes writes again within ${RECOVERY_LIMIT_MS} ms of space being freed, without a restart`, { skip }, () => {
      const writable = times.writable - times.freed;
      const ready = times.ready - times.freed;
      console.log(
        `# --sqlite-writer ${writer}: writes succeed ${writable.toFixed(0)} ms and /readyz answers 200 ${ready.toFixed(0)} ms after space is freed`,
      );
      assert.ok(writable < RECOVERY_LIMIT_MS, `writes succeeded ${writable.toFixed(0)} ms after`);
      assert.ok(ready < RECOVERY_LIMIT_MS, `/readyz answered 200 ${ready.toFixed(0)} ms after`);
      assert.equal(server.process.exitCode, null, 'the same process serves');
    });

    it(
      'loses nothing acknowledged and stores nothing refused; the feed has every change once, in order',
      { skip },
      async () => {
        const counts = await load.audit({ refusedMeansNotStored: true });
        console.log(
          `# --sqlite-writer ${writer}: ${JSON.stringify({ ...counts, events: counts.events.length, statuses: Object.fromEntries(load.statuses) })}`,
        );
        assert.ok(counts.opened > 0, 'some writes were refused');
        assert.ok(counts.certain > 0);
      },
    );

    it(
      'counts each refused write in plant_store_dependency_errors_total{dependency="disk"} and logs the fault once at error',
      { skip },
      async () => {
        const counted = await metric(server.url, 'plant_store_dependency_errors_total{dependency="disk"}');
        const refused = [...load.statuses].filter(([key]) => key.endsWith(' 503')).reduce((n, [, c]) => n + c, 0);
        assert.ok(counted >= refused, `${counted} counted, ${refused} writes answered 503`);
        const lines = server.stdout().split('\n');
        const full = lines.filter((l) => l.includes(`"msg":"the store's disk is full`));
        assert.ok(full.length >= 1 && full.every((l) => l.includes('"level":50')), full.join('\n'));
        assert.ok(
          lines.some((l) => l.includes(`"msg":"the store's disk takes writes again`) && l.includes('"level":30')),
        );
        // Each refused request is one `warn` line with the code, not an error with a stack.
        assert.deepEqual(
          lines.filter((l) => l.includes('"level":50') && !full.includes(l)),
          [],
        );
      },
    );

    it('leaves the file intact', { skip }, async () => {
      assert.equal(await server.stop(), 0);
      const db = new Database(database.slice('sqlite:'.length), { readonly: true });
      try {
        assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
      } finally {
        db.close();
      }
    });
  });
}
