import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { pg } from '../helpers/engines.js';
import { sleep } from '../helpers/load.js';
import { ANSWER_BOUND_MS, report, TIMEOUT_MS } from '../helpers/pg-faults.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { openStorage } from '../../src/storage/open.js';

/**
 * Contract, "Every request is answered, in bounded time", and what a 503 leaves behind it: a
 * change answered 503 while it still waited in the group commit's queue is never committed
 * afterwards (a change already inside a commit may land: its outcome is unknown, as the 503 says).
 * The database stalls the service's commits from outside: the test holds the lock on the
 * account's change-feed row (storage/postgres/outbox.ts), which every commit of the account's
 * events takes, and releases it once every request has been answered.
 */

describe(
  'a change still queued behind stalled commits, answered 503 at its deadline, is never committed',
  { skip: pg.skip },
  () => {
    // Batches of 1,000 plants: a commit takes at most four (group-commit.ts's MAX_PLANTS), and two
    // commits are in flight at once (postgres/index.ts's COMMITS_AT_ONCE). Batches 1 and 2 each
    // take a commit that stalls; when their waits end at the timeout, 3 to 10 fill the two commits
    // that follow (which stall too), and 11 and 12 are still queued when their own deadline
    // passes. Once the lock is released, the stalled commits go through, and a change still queued
    // behind them would be committed next.
    const ITEMS = 1_000;
    const INSIDE = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    const QUEUED = [11, 12];
    let server: RunningServer;
    let drop = async () => {};
    const answers = new Map<number, { status: number; ms: number }>();
    const stored = new Map<number, boolean>();

    before(async () => {
      const fresh = await pg.fresh();
      drop = fresh.drop;
      server = await startServer({ database: fresh.url, args: ['--database-timeout', `${TIMEOUT_MS / 1000}s`] });
      const token = server.firstToken!;
      const firstId = (batch: number) => batch * 10_000;
      const send = async (batch: number) => {
        const started = performance.now();
        const plants = Array.from({ length: ITEMS }, (_, i) => ({ id: firstId(batch) + i, name: `b${batch}-${i}` }));
        const response = await fetch(`${server.url}/plants/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(plants),
        });
        await response.arrayBuffer();
        answers.set(batch, { status: response.status, ms: performance.now() - started });
      };
      await send(0);
      const locker = postgres(fresh.url, { max: 1, onnotice: () => {} });
      const held = await locker.reserve();
      try {
        await held`BEGIN`;
        await held`SELECT last_seq FROM account_events WHERE account = 'default' FOR UPDATE`;
        const sent: Promise<void>[] = [];
        // Each in a turn of its own, so that they queue in the order they were sent.
        for (const batch of [...INSIDE, ...QUEUED]) {
          sent.push(send(batch));
          await sleep(20);
        }
        await Promise.all(sent);
        await held`ROLLBACK`;
      } finally {
        held.release();
        await locker.end();
      }
      // Long enough for anything still held in the service to reach the database.
      await sleep(2 * TIMEOUT_MS);
      const direct = await openStorage(fresh.url);
      try {
        for (const batch of [0, ...INSIDE, ...QUEUED]) {
          stored.set(batch, (await direct.getPlant('default', BigInt(firstId(batch)))) !== null);
        }
      } finally {
        await direct.close();
      }
    });

    after(async () => {
      await server?.stop();
      await drop();
    });

    it(`answers each 503 within ${ANSWER_BOUND_MS} ms`, () => {
      report('queued behind a stalled commit', {
        answers: [...answers].map(([batch, a]) => `${batch}: ${a.status} after ${a.ms.toFixed(0)} ms`),
        stored: [...stored].filter(([, is]) => is).map(([batch]) => batch),
      });
      assert.equal(answers.get(0)?.status, 200, 'the batch before the stall');
      for (const batch of [...INSIDE, ...QUEUED]) {
        const answer = answers.get(batch)!;
        assert.equal(answer.status, 503, `batch ${batch} answered ${answer.status}`);
        assert.ok(answer.ms <= ANSWER_BOUND_MS, `batch ${batch} answered after ${answer.ms.toFixed(0)} ms`);
      }
    });

    it('stores none of the changes answered 503 while queued (those inside a commit may have landed)', () => {
      assert.equal(stored.get(0), true, 'the batch created before the stall is stored');
      const landed = QUEUED.filter((batch) => stored.get(batch));
      assert.deepEqual(landed, [], 'batches answered 503 while queued, found in the store');
    });

    it('sends nothing after an answer: no "Reply was already sent" in its log', () => {
      const late = server
        .stdout()
        .split('\n')
        .filter((line) => line.includes('Reply was already sent'));
      assert.deepEqual(late, [], 'log lines of a reply sent twice');
    });
  },
);
