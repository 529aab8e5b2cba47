import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pg, pgbouncer, TEST_DATABASE_URL } from '../helpers/engines.js';
import { eventually } from '../helpers/wait.js';
import { startPagePgbouncer, startPgbouncer } from '../helpers/pgbouncer.js';
import { listPlants, postPlant } from '../helpers/http.js';
import { runCli, startServer, type RunningServer } from '../helpers/server.js';

/**
 * docs/pgbouncer.md: behind a transaction-pooling PgBouncer, --database names the pooler and
 * --database-direct-url the server itself. Migrations take the direct connection; the pool
 * prepares no statements (a statement prepared on one server connection is unknown on the next).
 * The PgBouncer here is the page's own: its pgbouncer.ini and userlist.txt, run as it says
 * (helpers/pgbouncer.ts). The contract tests also run through a pooler (`pgbouncer` in
 * helpers/engines.ts) with `?prepare=false` in the URL instead.
 */

const wanted = !process.env.TEST_ENGINES || process.env.TEST_ENGINES.split(',').includes('pgbouncer');
/** Left out by TEST_ENGINES, or skipped where PgBouncer is not installed (helpers/binaries.ts). */
const skip = !wanted || pgbouncer.skip;

describe(
  "two instances through docs/pgbouncer.md's PgBouncer in transaction mode, told the direct URL",
  { skip },
  () => {
    let servers: RunningServer[] = [];
    let bouncer: Awaited<ReturnType<typeof startPagePgbouncer>> | undefined;
    let drop = async () => {};
    let pooled = '';

    before(async () => {
      const store = await pg.fresh();
      drop = store.drop;
      const direct = new URL(store.url);
      bouncer = await startPagePgbouncer(store.url, direct.pathname.slice(1));
      // The page's URL: its user and password, the pooler's port, the database name it serves.
      const url = new URL(`postgres://127.0.0.1:${bouncer.port}/plants`);
      url.username = direct.username || 'postgres';
      url.password = bouncer.password;
      pooled = url.toString();
      const args = ['--database-direct-url', direct.toString()];
      // Started together on an empty database: the migrations run once, over the direct connections.
      servers = await Promise.all([1, 2].map(() => startServer({ database: pooled, args })));
    });

    after(async () => {
      const exits = await Promise.all(servers.map((s) => s.stop()));
      bouncer?.stop();
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

    it('lists by a search, a tag and a name order through the pooler with no statement error', async () => {
      const token = servers.find((s) => s.firstToken)!.firstToken!;
      const found = await Promise.all(servers.map((s) => listPlants(s.url, token, '?q=P19&sort=-name&limit=20')));
      const names = ['p199', 'p198', 'p197', 'p196', 'p195', 'p194', 'p193', 'p192', 'p191', 'p190', 'p19'];
      for (const reply of found) {
        assert.equal(reply.status, 200, reply.text);
        assert.deepEqual(
          (reply.json as { name: string }[]).map((p) => p.name),
          names,
        );
      }
      const tagged = await listPlants(servers[1]!.url, token, '?tag=none&q=p19');
      assert.deepEqual(tagged.json, []);
      for (const server of servers) {
        assert.doesNotMatch(server.output(), /"level":50|prepared statement/, 'no error was logged');
      }
    });

    it('creates and lists tokens through the pooler with the CLI, told by ?prepare=false', () => {
      const created = runCli([
        'token',
        'create',
        '--account',
        'cli',
        '--json',
        '--database',
        `${pooled}?prepare=false`,
      ]);
      assert.equal(created.status, 0, created.stderr);
      const listed = runCli(['token', 'list', '--json', '--database', `${pooled}?prepare=false`]);
      assert.equal(listed.status, 0, listed.stderr);
      assert.ok((JSON.parse(listed.stdout) as { account: string }[]).some((t) => t.account === 'cli'));
    });
  },
);

describe("a login PgBouncer's own settings cannot serve is named with where to look", { skip }, () => {
  it('warns "bouncer config error" with the cause PgBouncer gives and its log', async () => {
    // auth_type = any needs a user= on the database's line, which the helper's configuration has not.
    const bouncer = await startPgbouncer(TEST_DATABASE_URL, { settings: 'auth_type = any\n' });
    const store = await pg.fresh();
    const url = new URL(store.url);
    url.port = String(bouncer.port);
    url.searchParams.set('prepare', 'false');
    const server = await startServer({ database: url.toString() });
    try {
      await eventually(
        () => `a warn line naming the refusal, in:\n${server.output()}`,
        () => (/"reason":"bouncer config error: /.test(server.output()) ? true : undefined),
        10_000,
      );
      assert.match(
        server.output(),
        /auth_type = any without user=.*PgBouncer's log names the cause \(docs\/pgbouncer\.md\)/,
      );
    } finally {
      await server.stop();
      bouncer.stop();
      await store.drop();
    }
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
