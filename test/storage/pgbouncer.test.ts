import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pgbouncer } from '../helpers/engines.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { runCli, startServer, type RunningServer } from '../helpers/server.js';

/**
 * docs/pgbouncer.md: behind a transaction-pooling PgBouncer, --database names the pooler and
 * --database-direct-url the server itself. Migrations take the direct connection; the pool
 * prepares no statements (a statement prepared on one server connection is unknown on the next).
 * The contract tests also run through the pooler (`pgbouncer` in helpers/engines.ts) with
 * `?prepare=false` in the URL instead.
 */

const wanted = !process.env.TEST_ENGINES || process.env.TEST_ENGINES.split(',').includes('pgbouncer');
/** Left out by TEST_ENGINES, or skipped where PgBouncer is not installed (helpers/binaries.ts). */
const skip = !wanted || pgbouncer.skip;

/** The pooler's URL as an operator writes it: no `?prepare=false`, the direct URL says it all. */
const pooledUrl = (url: string) => {
  const bare = new URL(url);
  bare.search = '';
  return bare.toString();
};

describe('two instances through one PgBouncer in transaction mode, told the direct URL', { skip }, () => {
  let servers: RunningServer[] = [];
  let drop = async () => {};
  let direct = '';
  let pooled = '';

  before(async () => {
    const store = await pgbouncer.fresh();
    drop = store.drop;
    direct = pgbouncer.direct(store.url);
    pooled = store.url;
    const args = ['--database-direct-url', direct];
    // Started together on an empty database: the migrations run once, over the direct connections.
    servers = await Promise.all([1, 2].map(() => startServer({ database: pooledUrl(store.url), args })));
  });

  after(async () => {
    const exits = await Promise.all(servers.map((s) => s.stop()));
    await drop();
    assert.deepEqual(exits, [0, 0]);
  });

  it('migrates once and makes one first-start token between them', () => {
    const tokens = servers.map((s) => s.firstToken).filter((token) => token !== null);
    assert.equal(tokens.length, 1, servers.map((s) => s.output()).join('\n---\n'));
  });

  it('answers 400 concurrent creates and reads across both with no statement error', async () => {
    const token = servers.find((s) => s.firstToken)!.firstToken!;
    const ids = Array.from({ length: 400 }, (_, i) => BigInt(i) - 200n);
    const replies = await Promise.all(
      ids.map((id, i) => postPlant(servers[i % 2]!.url, token, `{"id": ${id}, "name": "p${id}"}`)),
    );
    assert.deepEqual(
      replies.filter((r) => r.status !== 200).map((r) => r.text),
      [],
    );
    const reads = await Promise.all(
      Array.from({ length: 60 }, (_, i) => listPlants(servers[i % 2]!.url, token, `?limit=${1 + (i % 7)}`)),
    );
    assert.ok(reads.every((r) => r.status === 200));
    const all = await listPlants(servers[0]!.url, token);
    assert.equal((all.json as unknown[]).length, 400);
    for (const server of servers) {
      assert.doesNotMatch(server.output(), /"level":50|prepared statement/, 'no error was logged');
    }
  });

  it('creates and lists tokens through the pooler with the CLI, told by ?prepare=false', () => {
    const created = runCli(['token', 'create', '--account', 'cli', '--json', '--database', pooled]);
    assert.equal(created.status, 0, created.stderr);
    const listed = runCli(['token', 'list', '--json', '--database', pooled]);
    assert.equal(listed.status, 0, listed.stderr);
    assert.ok((JSON.parse(listed.stdout) as { account: string }[]).some((t) => t.account === 'cli'));
  });
});

describe('--database-direct-url is refused with a SQLite --database', () => {
  it('exits 2 with one line', () => {
    const result = runCli([
      'serve',
      '--database',
      'sqlite:/tmp/plant-store-never.db',
      '--database-direct-url',
      'postgres://x@127.0.0.1/db',
    ]);
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /--database-direct-url is for PostgreSQL/);
  });
});
