import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import postgres from 'postgres';
import { pg } from '../helpers/engines.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ANSWER_BOUND_MS, report, TIMEOUT_MS } from '../helpers/pg-faults.js';
import { createToken, startServer, type RunningServer } from '../helpers/server.js';
import { openStorage } from '../../src/storage/open.js';

/**
 * Contract, "Every request is answered, in bounded time", and what a 503 leaves behind it: a
 * change answered 503 while it still waited in the group commit's queue is never committed
 * afterwards (a change already inside a commit may land: its outcome is unknown, as the 503 says).
 *
 * The database is made to stall from outside, by locks the test holds on a connection of its own:
 * the account's change-feed row (storage/postgres/outbox.ts), which every commit of the account's
 * events takes, and the tokens' table, which a token's first lookup reads. Two creates whose token
 * the server already knows each take one of the two commits in flight at once
 * (postgres/index.ts's COMMITS_AT_ONCE), which stall. Two creates sent before them with a token the
 * server has not looked up yet spend most of their deadline on that lookup; once the tokens are
 * free they queue behind the stalled commits, whose waits end later than their deadline. When
 * every create has been answered, the commits are let through: a change still queued behind them
 * would be committed next.
 */

/** How long the queued creates' lookup stalls: what is left of their deadline is shorter than the commits' wait. */
const LOOKUP_STALL_MS = 1_500;
/** How long after the queued creates the two that take the commits are sent. */
const COMMITS_AFTER_MS = 300;

describe(
  'a change still queued behind stalled commits, answered 503 at its deadline, is never committed',
  { skip: pg.skip },
  () => {
    const INSIDE = [101, 102];
    const QUEUED = [201, 202];
    let server: RunningServer;
    let drop = async () => {};
    const answers = new Map<number, { status: number; ms: number; body: string }>();
    const stored = new Map<number, boolean>();

    before(async () => {
      const fresh = await pg.fresh();
      drop = fresh.drop;
      server = await startServer({ database: fresh.url, args: ['--database-timeout', `${TIMEOUT_MS / 1000}s`] });
      const unseen = (await createToken(fresh.url, 'default')).token;
      const create = async (id: number, token: string) => {
        const started = performance.now();
        const response = await fetch(`${server.url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id, name: `plant ${id}` }),
        });
        answers.set(id, { status: response.status, ms: performance.now() - started, body: await response.text() });
      };
      // The first token known, and the account's change-feed row made. Its second lookup is after a
      // read of the tokens' version: from then on, its entry is confirmed by that read alone, which
      // the lock below does not stall.
      await create(1, server.firstToken!);
      await sleep(600);
      await create(2, server.firstToken!);
      const locker = postgres(fresh.url, { max: 2, onnotice: () => {} });
      const commits = await locker.reserve();
      const tokens = await locker.reserve();
      try {
        await commits`BEGIN`;
        await commits`SELECT last_seq FROM account_events WHERE account = 'default' FOR UPDATE`;
        await tokens`BEGIN`;
        await tokens`LOCK TABLE api_tokens IN ACCESS EXCLUSIVE MODE`;
        const sent = QUEUED.map((id) => create(id, unseen));
        await sleep(COMMITS_AFTER_MS);
        for (const id of INSIDE) {
          sent.push(create(id, server.firstToken!));
          await sleep(20);
        }
        await sleep(LOOKUP_STALL_MS - COMMITS_AFTER_MS);
        await tokens`ROLLBACK`;
        await Promise.all(sent);
        await commits`ROLLBACK`;
      } finally {
        commits.release();
        tokens.release();
        await locker.end();
      }
      // Long enough for anything still held in the service to reach the database.
      await sleep(2 * TIMEOUT_MS);
      const direct = await openStorage(fresh.url);
      try {
        for (const id of [1, 2, ...INSIDE, ...QUEUED])
          stored.set(id, (await direct.getPlant('default', BigInt(id))) !== null);
      } finally {
        await direct.close();
      }
    });

    after(async () => {
      await server?.stop();
      await drop();
    });

    it(`answers each create 503 within ${ANSWER_BOUND_MS} ms, with the message of a database that did not answer`, () => {
      report('queued behind a stalled commit', {
        answers: [...answers].map(([id, a]) => `${id}: ${a.status} after ${a.ms.toFixed(0)} ms`),
        stored: [...stored].filter(([, is]) => is).map(([id]) => id),
      });
      assert.deepEqual([answers.get(1)?.status, answers.get(2)?.status], [200, 200], 'the creates before the stall');
      for (const id of [...INSIDE, ...QUEUED]) {
        const answer = answers.get(id)!;
        assert.equal(answer.status, 503, `create ${id} answered ${answer.status}: ${answer.body}`);
        assert.ok(answer.ms <= ANSWER_BOUND_MS, `create ${id} answered after ${answer.ms.toFixed(0)} ms`);
        assert.match(answer.body, /did not answer within 2 s/, `create ${id}'s 503 says why: ${answer.body}`);
      }
    });

    it('stores none of the creates answered 503 while queued (those inside a commit may have landed)', () => {
      assert.deepEqual([stored.get(1), stored.get(2)], [true, true], 'the creates before the stall are stored');
      const landed = QUEUED.filter((id) => stored.get(id));
      assert.deepEqual(landed, [], 'creates answered 503 while queued, found in the store');
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
