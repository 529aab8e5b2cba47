import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { openStorage } from '../../src/storage/open.js';
import type { PlantChange } from '../../src/storage/types/plants.js';
import { ENGINES, withFreshStore, type Engine } from '../helpers/engines.js';
import { call, listPlants, postPlant } from '../helpers/http.js';
import { CLI, createToken, runCli, startServer } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/** Plain SQL on a store, outside the code under test; PostgreSQL's $1 is SQLite's ?. */
async function query(url: string, text: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  if (url.startsWith('sqlite:')) {
    const db = new Database(url.slice('sqlite:'.length));
    try {
      const statement = db.prepare(text.replace(/\$\d+/g, '?')).safeIntegers(true);
      if (statement.reader) return statement.all(...params) as Record<string, unknown>[];
      statement.run(...params);
      return [];
    } finally {
      db.close();
    }
  }
  const sql = postgres(url, { max: 1, onnotice: () => {}, types: { bigint: postgres.BigInt } });
  try {
    return [...(await sql.unsafe(text, params as never[]))];
  } finally {
    await sql.end();
  }
}

const count = async (url: string, table: string) =>
  Number((await query(url, `SELECT count(*) AS n FROM ${table}`))[0]!.n);

/** Plants through the storage layer, in a few big transactions (much faster than 20,000 POSTs). */
async function seedPlants(url: string, account: string, plants: { id: bigint; name: string; tag: string | null }[]) {
  const storage = await openStorage(url);
  try {
    for (let i = 0; i < plants.length; i += 5000) {
      const changes: PlantChange[] = plants.slice(i, i + 5000).map((plant, j) => ({
        kind: 'create',
        account,
        plant: { ...plant, revision: BigInt(i + j) * 7919n - (1n << 62n) },
        eventId: `evt_${account}_${plant.id}`,
      }));
      await storage.applyChanges(changes);
    }
  } finally {
    await storage.close();
  }
}

/** A webhook endpoint of `account`, as the webhook feature stores it: later plant changes queue deliveries for it. */
async function addEndpoint(url: string, account: string, id: string, events: string[], enabled: boolean) {
  const now = Date.now();
  if (url.startsWith('sqlite:')) {
    await query(url, 'INSERT INTO webhook_endpoints VALUES ($1, $2, $3, $4, NULL, $5, $6, NULL, NULL, $7)', [
      account,
      id,
      `https://hooks.example/${id}`,
      ` ${events.join(' ')} `,
      enabled ? 1 : 0,
      `whsec_${id}`,
      now,
    ]);
  } else {
    await query(url, 'INSERT INTO webhook_endpoints VALUES ($1, $2, $3, $4, NULL, $5, $6, NULL, NULL, $7)', [
      account,
      id,
      `https://hooks.example/${id}`,
      events,
      enabled,
      `whsec_${id}`,
      new Date(now),
    ]);
  }
}

function copy(from: string, to: string, extra: string[] = []) {
  return runCli(['copy', '--from', from, '--to', to, ...extra]);
}

/** The "N copied now" and "(resumed after M)" figures of a table's summary line. */
function copiedLine(stdout: string, table: string) {
  const match = new RegExp(
    `^${table} +(\\d+) in source, +(\\d+) copied now(?: \\(resumed after (\\d+)\\))?$`,
    'm',
  ).exec(stdout);
  assert.ok(match, `no summary line for ${table} in:\n${stdout}`);
  return { source: Number(match[1]), copied: Number(match[2]), resumed: Number(match[3] ?? 0) };
}

const EXACT_IDS = [9007199254740993n, 9007199254740992n, -(2n ** 63n), 2n ** 63n - 1n, 0n];

const PAIRS: [Engine, Engine][] = ENGINES.flatMap((from) => ENGINES.map((to): [Engine, Engine] => [from, to]));

for (const [fromEngine, toEngine] of PAIRS) {
  describe(`plant-store copy ${fromEngine.name} -> ${toEngine.name}`, () => {
    describe('copies tokens, plants, webhook endpoints and pending deliveries, and the tokens work on the target', () => {
      it('serves the same plants to the same tokens, ids exact, scopes and revocations kept', async () => {
        await withFreshStore(fromEngine, (from) =>
          withFreshStore(toEngine, async (to) => {
            const alice = await createToken(from, 'alice');
            const reader = await createToken(from, 'bob', ['--scopes', 'plants:read', '--expires', '30d']);
            const revoked = await createToken(from, 'carol');
            assert.equal(runCli(['token', 'revoke', revoked.id, '--database', from]).status, 0);
            await addEndpoint(from, 'alice', 'ep_1', ['plant.created', 'plant.deleted'], true);
            await addEndpoint(from, 'alice', 'ep_2', [], false);
            await seedPlants(
              from,
              'alice',
              EXACT_IDS.map((id, i) => ({ id, name: `plant ${id}`, tag: [null, '', 'aroid', 'ünïcødé 🌱', null][i]! })),
            );
            await seedPlants(from, 'bob', [{ id: 9007199254740993n, name: "bob's", tag: null }]);

            const result = copy(from, to);
            assert.equal(result.status, 0, result.stderr);
            assert.match(result.stdout, /^verified 3 accounts: row counts and checksums match$/m);
            assert.deepEqual(copiedLine(result.stdout, 'plants'), { source: 6, copied: 6, resumed: 0 });
            assert.deepEqual(copiedLine(result.stdout, 'webhook_deliveries'), { source: 5, copied: 5, resumed: 0 });

            const tokens = (url: string) => JSON.parse(runCli(['token', 'list', '--json', '--database', url]).stdout);
            assert.deepEqual(tokens(to), tokens(from));
            const endpoints = 'SELECT account, id, url, secret FROM webhook_endpoints ORDER BY id';
            assert.deepEqual(await query(to, endpoints), await query(from, endpoints));
            const deliveries = `SELECT account, endpoint_id, event_id, event_type, payload, state FROM webhook_deliveries
                                ORDER BY event_id`;
            assert.deepEqual(await query(to, deliveries), await query(from, deliveries));

            const server = await startServer({ database: to });
            try {
              assert.equal(server.firstToken, null, 'the copied tokens count as tokens: no first-start token');
              for (const id of EXACT_IDS) {
                const reply = await call(`${server.url}/plants/${id}`, { token: alice.token });
                assert.equal(reply.status, 200, `plant ${id}: ${reply.text}`);
                assert.equal((reply.json as { name: string }).name, `plant ${id}`);
              }
              const listed = await listPlants(server.url, alice.token);
              assert.deepEqual(
                (listed.json as { name: string }[]).map((p) => p.name),
                [...EXACT_IDS].sort((a, b) => (a < b ? -1 : 1)).map((id) => `plant ${id}`),
              );
              assert.deepEqual((await listPlants(server.url, reader.token)).json, [{ name: "bob's" }]);
              assert.equal((await postPlant(server.url, reader.token, { id: 1, name: 'x' })).status, 403);
              assert.equal((await listPlants(server.url, revoked.token)).status, 401);
            } finally {
              await server.stop();
            }
          }),
        );
      });
    });

    describe('a rerun copies nothing twice', () => {
      it('finds every row in place, inserts none and still verifies', async () => {
        await withFreshStore(fromEngine, (from) =>
          withFreshStore(toEngine, async (to) => {
            await createToken(from, 'alice');
            await seedPlants(
              from,
              'alice',
              Array.from({ length: 2500 }, (_, i) => ({ id: BigInt(i) * 3n, name: `p${i}`, tag: null })),
            );
            assert.equal(copy(from, to, ['--batch-size', '1000']).status, 0);
            for (const extra of [[], ['--no-resume']]) {
              const again = copy(from, to, extra);
              assert.equal(again.status, 0, again.stderr);
              for (const table of ['api_tokens', 'plants']) assert.equal(copiedLine(again.stdout, table).copied, 0);
              assert.match(again.stdout, /^verified 1 accounts: row counts and checksums match$/m);
            }
            assert.equal(await count(to, 'plants'), 2500);
            assert.equal(await count(to, 'api_tokens'), 1);
          }),
        );
      });
    });

    describe('an interrupted copy resumes where it stopped and ends equal', () => {
      it(
        'is killed mid-way through 20,000 plants, then a rerun copies only the rest',
        { timeout: 180_000 },
        async () => {
          await withFreshStore(fromEngine, (from) =>
            withFreshStore(toEngine, async (to) => {
              await createToken(from, 'alice');
              const total = 20_000;
              await seedPlants(
                from,
                'alice',
                Array.from({ length: total }, (_, i) => ({ id: BigInt(i) - 10_000n, name: `p${i}`, tag: `t${i % 7}` })),
              );
              const child = spawn(process.execPath, [CLI, 'copy', '--from', from, '--to', to, '--batch-size', '100'], {
                stdio: 'ignore',
              });
              const exited = new Promise((resolve) => child.on('exit', resolve));
              let seen = 0;
              await eventually(
                () => `2,000 plants copied or the copy ended (${seen} copied)`,
                async () => {
                  seen = await count(to, 'plants').catch(() => 0); // no table until the copy has migrated the target
                  return seen >= 2000 || child.exitCode !== null || undefined;
                },
                120_000,
                20,
              );
              child.kill('SIGKILL');
              await exited;
              const before = await count(to, 'plants');
              assert.ok(before >= 2000 && before < total, `killed after ${before} of ${total} plants`);

              const resumed = copy(from, to, ['--batch-size', '1000']);
              assert.equal(resumed.status, 0, resumed.stderr);
              assert.deepEqual(copiedLine(resumed.stdout, 'plants'), {
                source: total,
                copied: total - before,
                resumed: before,
              });
              assert.match(resumed.stdout, /^verified 1 accounts: row counts and checksums match$/m);
              assert.equal(await count(to, 'plants'), total);
            }),
          );
        },
      );
    });

    describe('a target holding data no copy wrote is refused before anything is written', () => {
      it('refuses a store that serve has started (its first-start token), with one line and exit 2', async () => {
        await withFreshStore(fromEngine, (from) =>
          withFreshStore(toEngine, async (to) => {
            await createToken(from, 'alice');
            await createToken(from, 'bob');
            await seedPlants(
              from,
              'alice',
              Array.from({ length: 25 }, (_, i) => ({ id: BigInt(i + 1), name: `p${i + 1}`, tag: null })),
            );
            const server = await startServer({ database: to });
            let firstToken: string | null;
            try {
              firstToken = server.firstToken;
              assert.ok(firstToken, 'serve on an empty store makes its first-start token');
              // One plant of the target's own, with an id above most of the source's.
              assert.equal((await postPlant(server.url, firstToken, { id: 20, name: 'mine' })).status, 200);
            } finally {
              await server.stop();
            }
            const before = { tokens: await count(to, 'api_tokens'), plants: await count(to, 'plants') };

            const result = copy(from, to);
            assert.equal(result.status, 2, result.stdout + result.stderr);
            assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
            assert.match(result.stderr, /already holds data that no copy wrote/);
            assert.deepEqual(
              { tokens: await count(to, 'api_tokens'), plants: await count(to, 'plants') },
              before,
              'nothing was written',
            );
          }),
        );
      });

      it('refuses a target that holds a copy of another source', async () => {
        await withFreshStore(fromEngine, (from) =>
          withFreshStore(fromEngine, (other) =>
            withFreshStore(toEngine, async (to) => {
              await createToken(from, 'alice');
              await createToken(other, 'bob');
              assert.equal(copy(other, to).status, 0);
              const result = copy(from, to);
              assert.equal(result.status, 2, result.stdout + result.stderr);
              assert.match(result.stderr, /holds a copy of .*, not of /);
              assert.equal(await count(to, 'api_tokens'), 1);
            }),
          ),
        );
      });

      it('resumes its own copy without skipping source rows below the keys the target holds', async () => {
        await withFreshStore(fromEngine, (from) =>
          withFreshStore(toEngine, async (to) => {
            await createToken(from, 'alice');
            await seedPlants(
              from,
              'alice',
              [10n, 20n, 30n].map((id) => ({ id, name: `p${id}`, tag: null })),
            );
            assert.equal(copy(from, to).status, 0);
            // The source gains plants below and above the copied ones; a rerun takes those above.
            await seedPlants(
              from,
              'alice',
              [5n, 40n].map((id) => ({ id, name: `p${id}`, tag: null })),
            );
            const rerun = copy(from, to);
            assert.deepEqual(copiedLine(rerun.stdout, 'plants'), { source: 5, copied: 1, resumed: 3 });
            assert.equal(rerun.status, 1, 'plant 5 lies before where the copy stopped: reported, not hidden');
            const full = copy(from, to, ['--no-resume']);
            assert.equal(full.status, 0, full.stderr);
            assert.equal(copiedLine(full.stdout, 'plants').copied, 1);
            assert.equal(await count(to, 'plants'), 5);
          }),
        );
      });
    });

    describe('a target that differs from the source is reported with exit status 1', () => {
      it('detects a changed plant name that counts alone would miss', async () => {
        await withFreshStore(fromEngine, (from) =>
          withFreshStore(toEngine, async (to) => {
            await createToken(from, 'alice');
            await seedPlants(from, 'alice', [
              { id: 1n, name: 'one', tag: null },
              { id: 2n, name: 'two', tag: null },
            ]);
            assert.equal(copy(from, to).status, 0);
            await query(to, "UPDATE plants SET name = 'tampered' WHERE id = 2");
            const result = copy(from, to);
            assert.equal(result.status, 1);
            assert.match(result.stderr, /the target differs from the source/);
            assert.match(result.stderr, /plants, account "alice": source 2 rows \(checksum \w+\), target 2 rows/);
          }),
        );
      });
    });
  });
}

describe('plant-store copy refuses bad store URLs with exit status 2 and one line', () => {
  it('refuses an unknown scheme, a missing SQLite source and the same store twice', async () => {
    for (const args of [
      ['--from', 'mysql://localhost/db', '--to', 'sqlite:/tmp/never-created.db'],
      ['--from', 'sqlite:/nonexistent/plant-store.db', '--to', 'sqlite:/tmp/never-created.db'],
      ['--from', 'sqlite:/tmp/x.db', '--to', 'sqlite:/tmp/x.db'],
      ['--from', 'sqlite:/tmp/x.db'],
    ]) {
      const result = runCli(['copy', ...args]);
      assert.equal(result.status, 2, args.join(' '));
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
    }
  });
});
