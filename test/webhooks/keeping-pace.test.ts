import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ENGINES } from '../helpers/engines.js';
import { postBatch } from '../helpers/http.js';
import { LoadClient, LONG } from '../helpers/load.js';
import { createToken } from '../helpers/server.js';
import { realServer } from '../helpers/suite.js';
import { patchWebhook, registerEndpoint } from '../helpers/webhooks.js';
import { eventually } from '../helpers/wait.js';

/**
 * Item 2 of "webhooks that keep pace": a slow or failing endpoint takes nothing measurable from
 * another's rate, and creates with a subscribed endpoint keep 0.9 of the rate without one. Both
 * compare rates measured side by side on one server, round by round in turn, and take the median
 * ratio: the machine is shared (2 cores, other suites), so a rate alone says little, a ratio of
 * neighbouring runs much more.
 */

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return Number.isInteger(middle) ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[Math.floor(middle)]!;
}

/**
 * A receiver answering 200 after `delayMs` (0: at once; null: never), noting when each request
 * arrived. A never-answering one holds its requests until it is closed.
 */
async function receiver(delayMs: number | null) {
  const arrivals: number[] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      arrivals.push(Date.now());
      if (delayMs === 0) response.end();
      else if (delayMs !== null) setTimeout(() => response.end(), delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Creates `count` plants (ids from `first`) in batches of at most 1,000, the most one batch may hold. */
async function createPlants(base: string, token: string, first: number, count: number) {
  for (let from = first; from < first + count; from += 1_000) {
    const size = Math.min(1_000, first + count - from);
    const batch = Array.from({ length: size }, (_, i) => ({ id: from + i, name: `plant ${from + i}` }));
    const answer = await postBatch(base, token, JSON.stringify(batch));
    assert.equal(answer.status, 200, `a batch of ${size} creates answered ${answer.status}`);
  }
}

/** Events a round sends to the fast endpoint: about a second of its rate. */
const ROUND_EVENTS = 2_000;
const ROUNDS = 4;

for (const engine of ENGINES.filter((e) => e.name !== 'pgbouncer')) {
  describe(
    `a slow and a never-answering endpoint do not lower another endpoint's rate by more than 10 % (${engine.name})`,
    {
      // A rate against a rate: beside other test files (npm test runs three at once) the fast
      // endpoint's rate swung from 900 to 2,800 a second between adjacent rounds. test:long runs it alone.
      skip: engine.skip || (!LONG && 'a timed comparison, run alone: LONG=1 (npm run test:long) runs it'),
    },
    () => {
      const s = realServer(engine, ['--webhook-allow-private']);
      it(`delivers ${ROUND_EVENTS} events to a fast endpoint, beside them, at >= 0.9 of its rate alone (median of ${ROUNDS} rounds each)`, async () => {
        const fast = await receiver(0);
        const slow = await receiver(1_000);
        const silent = await receiver(null);
        try {
          const fastAccount = (await createToken(s.database, 'fast')).token;
          await registerEndpoint(s.url, fastAccount, { url: fast.url });
          // Each of the others its own account, as a customer's would be.
          const others: Array<{ token: string; id: string }> = [];
          for (const [name, url] of [
            ['slow', slow.url],
            ['silent', silent.url],
          ] as const) {
            const token = (await createToken(s.database, name)).token;
            others.push({ token, id: (await registerEndpoint(s.url, token, { url })).id });
          }
          let nextId = 1;
          /** The fast endpoint's rate over a round: the middle 80 % of its arrivals, so neither ramp counts. */
          const fastRound = async () => {
            const from = fast.arrivals.length;
            await createPlants(s.url, fastAccount, nextId, ROUND_EVENTS);
            nextId += ROUND_EVENTS;
            const round = await eventually(
              () => `the fast endpoint's ${ROUND_EVENTS} events (${fast.arrivals.length - from} arrived)`,
              () => (fast.arrivals.length >= from + ROUND_EVENTS ? fast.arrivals.slice(from) : undefined),
              60_000,
              20,
            );
            assert.equal(round.length, ROUND_EVENTS, `the fast endpoint got ${round.length} of ${ROUND_EVENTS} events`);
            const low = round[Math.floor(ROUND_EVENTS * 0.1)]!;
            const high = round[Math.floor(ROUND_EVENTS * 0.9)]!;
            return (ROUND_EVENTS * 0.8 * 1000) / Math.max(1, high - low);
          };
          // Its window grows from 4 to its cap over its first deliveries (AIMD): a first round,
          // not counted, leaves it there, as every later round finds it.
          await fastRound();
          const alone: number[] = [];
          const beside: number[] = [];
          for (let round = 0; round < ROUNDS; round++) {
            alone.push(await fastRound());
            // The others get a backlog each (the slow one drains at about one a second, the silent one never).
            for (const { token, id } of others) {
              assert.equal((await patchWebhook(s.url, token, id, { enabled: true })).status, 200, 'enabled again');
              await createPlants(s.url, token, nextId, 100);
              nextId += 100;
            }
            await sleep(1_500);
            beside.push(await fastRound());
            // Disabling fails their pending events; attempts already in flight end on their own.
            for (const { token, id } of others) {
              assert.equal((await patchWebhook(s.url, token, id, { enabled: false })).status, 200, 'disabled');
            }
          }
          // Each round's ratio: its two sides ran next to each other.
          const ratio = median(beside.map((rate, round) => rate / alone[round]!));
          const perSecond = (rates: number[]) => rates.map((r) => Math.round(r)).join(', ');
          console.log(
            `fast endpoint (${engine.name}): alone ${perSecond(alone)}/s; beside slow and silent ${perSecond(beside)}/s; ` +
              `median ratio ${ratio.toFixed(2)}; slow got ${slow.arrivals.length}, silent ${silent.arrivals.length}`,
          );
          assert.ok(
            slow.arrivals.length > 0 && silent.arrivals.length > 0,
            'the slow and silent endpoints were being sent to',
          );
          assert.ok(
            ratio >= 0.9,
            `the fast endpoint's median rate beside them was ${ratio.toFixed(2)} of its rate alone ` +
              `(alone ${perSecond(alone)}/s, beside ${perSecond(beside)}/s)`,
          );
        } finally {
          await Promise.all([fast.close(), slow.close(), silent.close()]);
        }
      });
    },
  );
}

/** How long each side of a round loads the server (the bench's round), and with how many connections. */
const LOAD_MS = 5_000;
const CONNECTIONS = 32;

/** Creates as fast as the server takes them from CONNECTIONS connections for LOAD_MS: how many, and how many a second. */
async function createRate(
  client: LoadClient,
  token: string,
  firstId: number,
): Promise<{ created: number; perSecond: number }> {
  const endAt = Date.now() + LOAD_MS;
  const startedAt = Date.now();
  let created = 0;
  let nextId = firstId;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < endAt) {
        const id = nextId++;
        const answer = await client.post(token, { id, name: `loaded ${id}` });
        assert.equal(answer.status, 200, `a create answered ${answer.status}: ${answer.text.slice(0, 200)}`);
        created++;
      }
    }),
  );
  return { created, perSecond: (created * 1000) / (Date.now() - startedAt) };
}

for (const engine of ENGINES.filter((e) => e.name !== 'pgbouncer')) {
  describe(
    `the API comes first: creates with a subscribed endpoint keep 0.9 of the rate without one (${engine.name})`,
    {
      // Two minutes of full load that is not met yet (below): in `npm run test:long`, not in every run.
      skip: engine.skip || (!LONG && 'not met yet (issue 42), and two minutes of full load: LONG=1 runs it'),
    },
    () => {
      const s = realServer(engine, ['--webhook-allow-private']);
      it(
        `creates at full load for ${LOAD_MS / 1000} s, ${ROUNDS} rounds each way in turn: median of the rounds' ratios >= 0.9`,
        {
          // Not met yet (issue 42): on a shared 2-core machine at load average 6 this measured 0.70
          // to 0.93 (SQLite), 0.72 and 0.73 (PostgreSQL), with 17 to 45 % of the events delivered
          // while the load lasted: the process did not count as saturated (apiSaturation, delivery-thread.ts), so the
          // deliverer ran beside the API. The test runs and prints its figures; drop `todo` once it passes.
          todo: 'creates with an endpoint keep 0.9 of the rate without one: not met yet (bench/analysis.md)',
        },
        async () => {
          const answering = await receiver(0);
          const client = new LoadClient(s.url, CONNECTIONS);
          try {
            const without = (await createToken(s.database, 'no-endpoint')).token;
            const subscribed = (await createToken(s.database, 'subscribed')).token;
            await registerEndpoint(s.url, subscribed, { url: answering.url });
            // A first load, not counted: the server's code compiled and its caches warm for both sides.
            await createRate(client, without, 10_000_000);
            const bare: number[] = [];
            const withEndpoint: number[] = [];
            /** Of each round's events, the share delivered while its load lasted. */
            const sentDuringLoad: number[] = [];
            for (let round = 0; round < ROUNDS; round++) {
              // Each side first every other round, so that a machine growing busier or quieter over
              // the test weighs on both sides alike.
              const firstId = 1 + round * 1_000_000;
              if (round % 2 === 0) bare.push((await createRate(client, without, firstId)).perSecond);
              const arrivedBefore = answering.arrivals.length;
              const loaded = await createRate(client, subscribed, firstId);
              withEndpoint.push(loaded.perSecond);
              sentDuringLoad.push((answering.arrivals.length - arrivedBefore) / loaded.created);
              // The backlog the load left goes out before the next round, so that it costs the
              // endpoint's side and not the other's (the API came first while the load lasted).
              let before = -1;
              await eventually(
                () => `the backlog sent (${answering.arrivals.length} arrived, still arriving)`,
                () => {
                  const quiet = answering.arrivals.length === before;
                  before = answering.arrivals.length;
                  return quiet || undefined;
                },
                120_000,
                1_000,
              );
              if (round % 2 === 1) bare.push((await createRate(client, without, firstId)).perSecond);
            }
            // Each round's ratio: its two sides ran next to each other.
            const ratio = median(withEndpoint.map((rate, round) => rate / bare[round]!));
            const perSecond = (rates: number[]) => rates.map((r) => Math.round(r)).join(', ');
            console.log(
              `creates (${engine.name}): without an endpoint ${perSecond(bare)}/s; with one ${perSecond(withEndpoint)}/s; ` +
                `median ratio ${ratio.toFixed(2)}; delivered while the load lasted: ` +
                `${sentDuringLoad.map((share) => `${Math.round(share * 100)} %`).join(', ')} of each round's events`,
            );
            assert.ok(answering.arrivals.length > 0, 'the endpoint received events');
            assert.ok(
              ratio >= 0.9,
              `creates with an endpoint ran at ${ratio.toFixed(2)} of the rate without one ` +
                `(without ${perSecond(bare)}/s, with ${perSecond(withEndpoint)}/s)`,
            );
          } finally {
            client.close();
            await answering.close();
          }
        },
      );
    },
  );
}
