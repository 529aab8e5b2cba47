import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ENGINES_AND_POOLER } from '../helpers/engines.js';
import { call, listPlants, nextLink, postPlant } from '../helpers/http.js';
import { createToken, runCli, startServer, type RunningServer } from '../helpers/server.js';

/**
 * Three stateless instances on one store, as behind a load balancer: the PostgreSQL deployment
 * across hosts, and on SQLite the same guarantees for processes sharing one file on one host.
 */

const REVOCATION_DEADLINE_MS = 1_000;

for (const engine of ENGINES_AND_POOLER) {
  describe(`three instances on one store (${engine.name})`, { skip: engine.skip }, () => {
    let database = '';
    let servers: RunningServer[] = [];
    let drop = async () => {};

    before(async () => {
      const store = await engine.fresh();
      drop = store.drop;
      database = store.url;
      // Started together on an empty store: migrations and the first token must each happen once.
      servers = await Promise.all([1, 2, 3].map(() => startServer({ database })));
    });

    after(async () => {
      const exits = await Promise.all(servers.map((s) => s.stop()));
      await drop();
      assert.ok(
        exits.every((code) => code === 0),
        `exit codes after SIGTERM: ${exits.join(', ')}`,
      );
    });

    it('creates one first token between them, not one each', () => {
      assert.equal(
        servers.filter((s) => s.firstToken !== null).length,
        1,
        servers.map((s) => s.output()).join('\n---\n'),
      );
    });

    it('reads through every instance what was written through any of them', async () => {
      const { token } = await createToken(database, 'spread');
      const ids = Array.from({ length: 30 }, (_, i) => 9007199254740990n + BigInt(i));
      const writes = await Promise.all(
        ids.map((id, i) => postPlant(servers[i % 3]!.url, token, `{"id": ${id}, "name": "p${id}"}`)),
      );
      assert.ok(writes.every((w) => w.status === 200));
      const expected = JSON.stringify(ids.map((id) => ({ name: `p${id}` })));
      for (const server of servers) assert.equal((await listPlants(server.url, token)).text, expected);
    });

    it('shows a plant created through one instance on the page another has just served', async () => {
      const { token } = await createToken(database, 'fresh-pages');
      const expected: { name: string }[] = [];
      for (let i = 0; i < 6; i++) {
        // Every instance serves (and may keep) the first page, then one of them creates a plant on it.
        for (const server of servers)
          assert.equal((await listPlants(server.url, token, '?limit=10')).text, JSON.stringify(expected));
        assert.equal((await postPlant(servers[i % 3]!.url, token, { id: i, name: `fresh ${i}` })).status, 200);
        expected.push({ name: `fresh ${i}` });
        for (const server of servers)
          assert.equal((await listPlants(server.url, token, '?limit=10')).text, JSON.stringify(expected));
      }
    });

    it('treats the same create sent to all three at once as one plant', async () => {
      const { token } = await createToken(database, 'replayed');
      const body = '{"id": -9223372036854775808, "name": "Fern"}';
      const replies = await Promise.all(
        servers.flatMap((s) => Array.from({ length: 10 }, () => postPlant(s.url, token, body))),
      );
      assert.ok(replies.every((r) => r.status === 200));
      for (const server of servers) assert.equal((await listPlants(server.url, token)).text, '[{"name":"Fern"}]');
    });

    it('follows next links from one instance through the others, visiting every plant once', async () => {
      const { token } = await createToken(database, 'paged');
      await Promise.all(
        Array.from({ length: 25 }, (_, i) => postPlant(servers[0]!.url, token, { id: i, name: `n${i}` })),
      );
      const seen: string[] = [];
      let reply = await listPlants(servers[0]!.url, token, '?limit=4');
      for (let hop = 1; ; hop++) {
        seen.push(...(reply.json as { name: string }[]).map((p) => p.name));
        const next = nextLink(reply);
        if (next === null) break;
        const { pathname, search } = new URL(next);
        reply = await call(`${servers[hop % 3]!.url}${pathname}${search}`, { token });
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 25 }, (_, i) => `n${i}`),
      );
    });

    it('refuses a token revoked through the CLI on all three within 1 second', async () => {
      const { id, token } = await createToken(database, 'revoked');
      // Every instance has just accepted (and cached) the token when it is revoked.
      for (const server of servers) assert.equal((await listPlants(server.url, token)).status, 200);

      const revoked = runCli(['token', 'revoke', id, '--database', database]);
      assert.equal(revoked.status, 0, revoked.stderr);
      const start = Date.now();

      const refusedAfter = await Promise.all(
        servers.map(async (server) => {
          for (;;) {
            const reply = await listPlants(server.url, token);
            if (reply.status === 401) {
              assert.match(reply.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
              return Date.now() - start;
            }
            assert.equal(reply.status, 200);
            if (Date.now() - start > 2 * REVOCATION_DEADLINE_MS) return Infinity;
            await sleep(25);
          }
        }),
      );
      assert.ok(
        refusedAfter.every((ms) => ms <= REVOCATION_DEADLINE_MS),
        `refused after ${refusedAfter.join(', ')} ms`,
      );
      for (const server of servers) assert.equal((await listPlants(server.url, token)).status, 401);
    });
  });
}
