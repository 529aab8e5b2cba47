import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ENGINES } from '../helpers/engines.js';
import { testApp, type TestApp } from '../helpers/app.js';
import { assertErrorBody } from '../helpers/raw-http.js';
import { scaled } from '../helpers/load.js';

/**
 * Contract: "GET /plants returns only the caller's account's plants. No request can read, detect
 * or change another account's plants: not by id, not through a 409." and "id is unique within
 * an account".
 *
 * A property over random interleavings: several accounts (whose names differ only by case, an
 * accent, or SQL wildcard characters) create and list plants, in rounds whose requests run
 * concurrently, from a small pool of ids so that the same id is used in many accounts. A model
 * of what each account stored predicts every answer.
 */

const RUNS = scaled(100, 1_000);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const IDS = [0n, 1n, 2n, -1n, 42n, 2n ** 53n, 2n ** 53n + 1n, INT64_MAX, INT64_MIN];
/** Account names that a careless query would confuse: case, accents, LIKE wildcards, spaces. */
const ACCOUNT_SUFFIXES = ['a', 'A', 'ä', 'a_', 'a%', 'a '];

interface Plant {
  name: string;
  tag?: string;
}

type Op =
  | { kind: 'create'; account: number; token: number; id: bigint; variant: number; shared: boolean; tagged: boolean }
  | { kind: 'list'; account: number; token: number; limit: number | null };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      account: fc.nat(ACCOUNT_SUFFIXES.length - 1),
      token: fc.nat(1),
      id: fc.constantFrom(...IDS),
      variant: fc.nat(1),
      shared: fc.boolean(),
      tagged: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('list' as const),
      account: fc.nat(ACCOUNT_SUFFIXES.length - 1),
      token: fc.nat(1),
      limit: fc.option(fc.integer({ min: 1, max: 4 })),
    }),
  },
);
/** Rounds of requests; the requests of one round are in flight together. */
const scenario = fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 8 });

/**
 * The plant a create sends. `shared` plants are identical in every account (a store keyed by id
 * alone would take them for retries); the others name their account.
 */
function plantOf(accountName: string, o: Extract<Op, { kind: 'create' }>): Plant {
  const name = `${o.shared ? 'shared' : accountName}|${o.id}|v${o.variant}`;
  return o.tagged ? { name, tag: `tag v${o.variant}` } : { name };
}

function idOf(plant: Plant): bigint {
  return BigInt(plant.name.split('|')[1]!);
}

const samePlant = (a: Plant, b: Plant) => a.name === b.name && a.tag === b.tag;

interface Reply {
  status: number;
  body: string;
  headers: Record<string, unknown>;
}

for (const engine of ENGINES) {
  describe(`an account sees and touches only its own plants (${engine.name})`, () => {
    let t: TestApp;
    let run = 0;

    before(async () => {
      t = await testApp(engine);
    });
    after(async () => t?.close());

    async function inject(method: 'GET' | 'POST', url: string, token: string, payload?: string): Promise<Reply> {
      const response = await t.app.inject({
        method,
        url,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(payload === undefined ? {} : { payload }),
      });
      return { status: response.statusCode, body: response.body, headers: response.headers };
    }

    /** Every page, following rel="next" links, or the streamed whole list. */
    async function listAll(token: string, limit: number | null): Promise<Plant[]> {
      if (limit === null) {
        const reply = await inject('GET', '/plants', token);
        assert.equal(reply.status, 200, reply.body);
        return JSON.parse(reply.body) as Plant[];
      }
      const plants: Plant[] = [];
      let url: string | null = `/plants?limit=${limit}`;
      while (url !== null) {
        const reply = await inject('GET', url, token);
        assert.equal(reply.status, 200, reply.body);
        plants.push(...(JSON.parse(reply.body) as Plant[]));
        const link = /<([^>]+)>;\s*rel="next"/.exec(String(reply.headers.link ?? ''))?.[1];
        url = link ?? null;
      }
      return plants;
    }

    it(`random interleavings of creates and lists by ${ACCOUNT_SUFFIXES.length} accounts with shared ids (${RUNS} runs)`, async () => {
      await fc.assert(
        fc.asyncProperty(scenario, async (rounds) => {
          run++;
          const accounts = ACCOUNT_SUFFIXES.map((suffix) => `iso-${engine.name}-${run}-${suffix}`);
          // Two tokens per account: an account may hold many tokens, all reaching the same plants.
          const tokens = await Promise.all(
            accounts.map(async (account) => [await t.token(account), await t.token(account)]),
          );
          const model = accounts.map(() => new Map<bigint, Plant>());
          const everyName = () => model.flatMap((plants) => [...plants.values()].map((p) => p.name));

          for (const round of rounds) {
            const before = model.map((plants) => new Map(plants));
            const replies = await Promise.all(
              round.map((o) => {
                const token = tokens[o.account]![o.token]!;
                if (o.kind === 'list') return listAll(token, o.limit);
                const plant = plantOf(accounts[o.account]!, o);
                return inject('POST', '/plants', token, JSON.stringify(plant).replace('{', `{"id":${o.id},`));
              }),
            );

            // Creates: an id the account already had is a retry (same plant) or a 409; an id it did
            // not have is a 200 for the new plant, whatever other accounts hold under that id.
            const winners = new Map<string, Plant>();
            round.forEach((o, i) => {
              if (o.kind !== 'create') return;
              const reply = replies[i] as Reply;
              const sent = plantOf(accounts[o.account]!, o);
              const held = before[o.account]!.get(o.id);
              const where = `${accounts[o.account]} id ${o.id}`;
              if (reply.status === 409) {
                assertErrorBody(409, String(reply.headers['content-type']), reply.body, where);
                for (const name of everyName())
                  assert.ok(!reply.body.includes(name), `the 409 reveals no plant: ${reply.body}`);
                if (held !== undefined)
                  assert.ok(!samePlant(held, sent), `a retry of the stored plant is not a 409 (${where})`);
                return;
              }
              assert.equal(reply.status, 200, `${where}: ${reply.body}`);
              const answered = JSON.parse(reply.body) as Plant;
              assert.ok(samePlant(answered, sent), `a 200 answers with the plant sent (${where}): ${reply.body}`);
              if (held !== undefined)
                assert.ok(samePlant(held, sent), `${where} already held another plant: must be 409`);
              const key = `${o.account}|${o.id}`;
              const winner = winners.get(key);
              if (winner !== undefined)
                assert.ok(samePlant(winner, sent), `two different plants both got 200 for ${where}`);
              winners.set(key, sent);
              model[o.account]!.set(o.id, sent);
            });
            round.forEach((o, i) => {
              if (o.kind !== 'create' || (replies[i] as Reply).status !== 409) return;
              const held = model[o.account]!.get(o.id);
              assert.ok(
                held !== undefined,
                `a 409 in ${accounts[o.account]} for id ${o.id}, which the account never stored (another account's plant showed through)`,
              );
            });

            // Lists: ascending ids, only the account's own plants, nothing stored before the round missing.
            round.forEach((o, i) => {
              if (o.kind !== 'list') return;
              const listed = replies[i] as Plant[];
              const mine = model[o.account]!;
              const ids = listed.map(idOf);
              for (let k = 1; k < ids.length; k++) assert.ok(ids[k - 1]! < ids[k]!, 'ascending ids, each once');
              for (const plant of listed) {
                const own = mine.get(idOf(plant));
                assert.ok(
                  own !== undefined && samePlant(own, plant),
                  `${accounts[o.account]} sees ${JSON.stringify(plant)}, which it did not create`,
                );
              }
              for (const [id, plant] of before[o.account]!) {
                assert.ok(
                  listed.some((p) => samePlant(p, plant)),
                  `${accounts[o.account]} misses its plant ${id}`,
                );
              }
            });
          }

          // At the end, each account's full list is exactly what it stored, in id order.
          for (const [a, plants] of model.entries()) {
            const expected = [...plants.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, p]) => p);
            assert.deepEqual(await listAll(tokens[a]![0]!, null), expected, `the whole list of ${accounts[a]}`);
          }
        }),
        { numRuns: RUNS, seed: SEED, includeErrorInReport: true },
      );
    });
  });
}
