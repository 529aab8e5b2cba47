import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PLANT_EVENT_TYPES } from '../../src/events/plant-event.js';
import { assertPresent, PGBOUNCER } from '../helpers/binaries.js';
import { metric } from '../helpers/http.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { OWN_POSTGRES_SKIP, useOwnPostgres } from '../helpers/own-postgres.js';
import {
  ANSWER_BOUND_MS,
  assertAnsweredInBound,
  closeLoaded,
  firstWriteAfter,
  loadedServer,
  readyAfter,
  RECOVERY_LIMIT_MS,
  refusalsAfterRecovery,
  report,
  stopLoad,
  type Loaded,
} from '../helpers/pg-faults.js';
import { startPgbouncer, type Pgbouncer } from '../helpers/pgbouncer.js';
import { type Endpoint, Receiver, registerEndpoint, WEBHOOK_TEST_ARGS } from '../helpers/webhooks.js';
import { eventKeyOf, undeliveredAfter } from '../helpers/fault-load.js';

/**
 * Contract, "When what it depends on fails": while PostgreSQL (directly or through PgBouncer) is
 * stopped, restarting, or has dropped the service's connections, every request is answered within
 * `--database-timeout` plus 1 s (2xx, or 503 with Retry-After and the Error body; never a hang, a
 * reset, a 500); /healthz stays 200, /readyz is 503 within the timeout and 200 again after; once
 * the database answers, new requests succeed within 2 s; nothing acknowledged is lost, and the
 * change feed resumed from its last cursor has every change once, in commit order.
 *
 * A PostgreSQL cluster of the test's own (helpers/own-postgres.ts), a server with
 * `--database-timeout 2s` and a load of 24 clients (creates, batches, PATCHes, DELETEs, reads) with
 * the change feed open (helpers/fault-load.ts), each case on a database of its own.
 */

const pg = useOwnPostgres();

interface Times {
  /** The fault was made (pg_ctl stop called, PgBouncer killed). */
  fault: number;
  /** The database answers again (pg_ctl start returned, PgBouncer listens). */
  back: number;
  /** The first write answered 2xx after `back`. */
  write: number;
  /** /readyz first answered 200 after `back`. */
  ready: number;
}

/**
 * One fault under load: `fault` makes it and returns once the database answers again (as
 * performance.now()); the load then runs on for a second.
 */
function faultUnderLoad(
  title: string,
  {
    skip,
    database,
    fault,
    readinessFalls = true,
  }: {
    skip: string | false;
    database: () => Promise<{ url: string; args?: string[] }>;
    fault: (times: Times) => Promise<void>;
    /** Whether /readyz must turn 503 (not when only connections are dropped: the database still answers). */
    readinessFalls?: boolean;
  },
) {
  describe(title, { skip }, () => {
    let run: Loaded;
    let receiver: Receiver;
    let endpoint: Endpoint;
    let databaseName = '';
    const times: Times = { fault: 0, back: 0, write: 0, ready: 0 };

    before(async () => {
      const { url, args } = await database();
      databaseName = new URL(url).pathname.slice(1);
      receiver = await Receiver.start();
      run = await loadedServer(url, [...WEBHOOK_TEST_ARGS, ...(args ?? [])], async (server) => {
        endpoint = await registerEndpoint(server.url, server.firstToken!, {
          url: receiver.url(),
          events: [...PLANT_EVENT_TYPES],
        });
      });
      await sleep(1_000);
      await fault(times);
      times.write = await firstWriteAfter(run.load, times.back);
      times.ready = await readyAfter(run.probes, times.back);
      await sleep(1_000);
      await stopLoad(run);
    });

    after(async () => {
      await closeLoaded(run);
      await receiver?.close();
    });

    it(`answers every request within ${ANSWER_BOUND_MS} ms: 2xx, or 503 with Retry-After and the Error body; never a 500, a reset or an empty reply; /healthz 200 throughout`, () => {
      const slowest = assertAnsweredInBound(run);
      const refused = [...run.load.statuses].filter(([key]) => key.endsWith(' 503')).reduce((n, [, c]) => n + c, 0);
      report(title, {
        slowestRequestMs: Math.round(slowest),
        refused,
        statuses: Object.fromEntries(run.load.statuses),
      });
    });

    it(`/readyz: ${readinessFalls ? `503 within ${ANSWER_BOUND_MS} ms of the fault, then ` : ''}200 again once the database answers`, () => {
      if (readinessFalls) {
        const down = run.probes.firstAnswered(503, times.fault);
        assert.ok(down !== undefined, '/readyz answered 503 while the database was away');
        assert.ok(down - times.fault <= ANSWER_BOUND_MS, `/readyz 503 ${(down - times.fault).toFixed(0)} ms after`);
        report(title, { readyz503AfterFaultMs: Math.round(down - times.fault) });
      }
      assert.ok(Number.isFinite(times.ready), '/readyz answered 200 again');
    });

    it(`takes writes again within ${RECOVERY_LIMIT_MS} ms of the database answering, without a restart`, async () => {
      const write = times.write - times.back;
      const ready = times.ready - times.back;
      report(title, {
        firstWrite2xxAfterBackMs: Math.round(write),
        readyz200AfterBackMs: Math.round(ready),
        downMs: Math.round(times.back - times.fault),
      });
      assert.ok(write <= RECOVERY_LIMIT_MS, `the first write succeeded ${write.toFixed(0)} ms after`);
      assert.ok(ready <= RECOVERY_LIMIT_MS, `/readyz answered 200 ${ready.toFixed(0)} ms after`);
      assert.equal(await metric(run.server.url, 'plant_store_database_unreachable_seconds'), 0);
    });

    it('loses nothing acknowledged; the feed resumed from its last cursor has every change once, in commit order', async () => {
      const counts = await run.load.audit({ refusedMeansNotStored: false }).catch((error: Error) => {
        const warned = run.server
          .stdout()
          .split('\n')
          .filter((l) => /"level":(40|50)/.test(l));
        error.message += `\nthe server's last warnings:\n${warned.slice(-8).join('\n')}`;
        throw error;
      });
      report(title, { ...counts, events: counts.events.length });
      assert.ok(counts.certain > 0);
      assert.ok(run.load.count('create 503') + run.load.count('batch 503') > 0, 'the fault refused some writes');
    });

    it(`refuses nothing once the database has answered for ${RECOVERY_LIMIT_MS} ms`, () => {
      assert.deepEqual(refusalsAfterRecovery(run.load, times.back), []);
    });

    it('delivers a webhook for every acknowledged change, once per webhook-id', async () => {
      const { events } = await run.load.audit({ refusedMeansNotStored: false });
      // A delivery whose result could not be recorded while the database was away is sent again
      // once its lease ends.
      const waitFrom = performance.now();
      const missing = await undeliveredAfter(events, receiver.received);
      const waitedForDeliveriesMs = Math.round(performance.now() - waitFrom);
      if (missing.length > 0) {
        const listing = await fetch(`${run.server.url}/webhooks/${endpoint.id}/deliveries?limit=1000`, {
          headers: { authorization: `Bearer ${run.server.firstToken}` },
        });
        const states = new Map<string, number>();
        for (const d of (await listing.json()) as { state: string; lastError?: string; lastStatus?: number }[]) {
          const state = `${d.state} ${d.lastStatus ?? d.lastError ?? ''}`;
          states.set(state, (states.get(state) ?? 0) + 1);
        }
        const webhookLines = run.server
          .stdout()
          .split('\n')
          .filter((l) => l.includes('webhooks'));
        // What the store says of the rows left, and of the connections: whether they are leased,
        // not yet due, or locked by a session that never ended.
        const rows = await pg.psql(
          `SELECT state, attempts, lease_until > now() AS leased, next_attempt_at > now() AS later, count(*)
           FROM webhook_deliveries GROUP BY 1, 2, 3, 4`,
          databaseName,
        );
        const sessions = await pg.psql(
          `SELECT application_name, state, wait_event_type, left(query, 80), count(*) FROM pg_stat_activity
           WHERE datname = '${databaseName}' GROUP BY 1, 2, 3, 4`,
          databaseName,
        );
        assert.fail(
          `${missing.length} of ${events.length} acknowledged changes never delivered; deliveries by state ` +
            `${JSON.stringify(Object.fromEntries(states))}; the store's deliveries (state, attempts, leased, later, ` +
            `count):\n${rows}\nits sessions:\n${sessions}\nthe server's webhook lines:\n${webhookLines.slice(-10).join('\n')}`,
        );
      }
      const byId = new Map<string, string>();
      for (const r of receiver.received) {
        const key = eventKeyOf(r.event, r.body);
        assert.equal(byId.get(r.id) ?? key, key, `webhook-id ${r.id} is one change`);
        byId.set(r.id, key);
      }
      report(title, {
        changes: events.length,
        deliveries: receiver.received.length,
        webhookIds: byId.size,
        waitedForDeliveriesMs,
      });
    });
  });
}

const downForTwoSeconds = (mode: 'fast' | 'immediate') => async (times: Times) => {
  times.fault = performance.now();
  await pg.stop(mode);
  await sleep(2_000);
  await pg.start();
  times.back = performance.now();
};

const ownDatabase = async () => ({ url: pg.url(await pg.createDatabase()) });

faultUnderLoad('PostgreSQL stopped (pg_ctl stop -m fast) under load, started again 2 s later', {
  skip: OWN_POSTGRES_SKIP,
  database: ownDatabase,
  fault: downForTwoSeconds('fast'),
});

faultUnderLoad('PostgreSQL killed (pg_ctl stop -m immediate) under load, started again 2 s later', {
  skip: OWN_POSTGRES_SKIP,
  database: ownDatabase,
  fault: downForTwoSeconds('immediate'),
});

let terminated = 0;
faultUnderLoad("the service's connections terminated (pg_terminate_backend) five times under load", {
  skip: OWN_POSTGRES_SKIP,
  database: async () => {
    const name = await pg.createDatabase();
    terminated = 0;
    return { url: pg.url(name), args: ['--pg-pool-max', '10'] };
  },
  readinessFalls: false,
  fault: async (times) => {
    times.fault = performance.now();
    for (let i = 0; i < 5; i++) {
      const killed = await pg.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'plant-store' AND datname LIKE 'plant_store_fault_%'",
      );
      terminated += Number(killed);
      await sleep(400);
    }
    times.back = performance.now();
    report('pg_terminate_backend', { connectionsTerminated: terminated });
    assert.ok(terminated >= 5, `${terminated} connections terminated`);
  },
});

let bouncer: Pgbouncer | undefined;
after(() => bouncer?.stop());
faultUnderLoad('PgBouncer (transaction pooling) killed under load and started again 1 s later', {
  skip: OWN_POSTGRES_SKIP || PGBOUNCER.skip,
  database: async () => {
    assertPresent(PGBOUNCER);
    const name = await pg.createDatabase();
    bouncer = await startPgbouncer(pg.url(name));
    return {
      url: `postgres://postgres@127.0.0.1:${bouncer.port}/${name}`,
      args: ['--database-direct-url', pg.url(name)],
    };
  },
  fault: async (times) => {
    times.fault = performance.now();
    await bouncer!.restart(1_000);
    times.back = performance.now();
  },
});
