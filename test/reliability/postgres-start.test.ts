import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { oneShot } from '../helpers/load.js';
import { OWN_POSTGRES_SKIP, useOwnPostgres } from '../helpers/own-postgres.js';
import { report, TIMEOUT_MS } from '../helpers/pg-faults.js';
import { CLI, startServer, type RunningServer } from '../helpers/server.js';

/**
 * Contract, "When what it depends on fails": "A database that is down at start is waited for:
 * serve listens at once (/healthz 200, /readyz 503, every API request 503 with Retry-After), tries
 * again with backoff (0.5 s doubling to 10 s, each failure one warn line with the reason) and
 * serves as soon as it answers. A permanent error (password refused, database does not exist, a
 * URL that cannot be parsed) exits 1 at once with one line naming it. The same holds for
 * migrations: they run when the database first answers."
 *
 * A PostgreSQL cluster of the test's own (helpers/own-postgres.ts), stopped before the server starts.
 */

const pg = useOwnPostgres();

const WAITING = 'database: not reachable at start; serving 503 until it answers';

describe('PostgreSQL down when the server starts', { skip: OWN_POSTGRES_SKIP }, () => {
  let server: RunningServer;
  let database = '';
  const times = { spawned: 0, listening: 0, started: 0, ready: 0, token: 0 };
  const whileDown: Record<string, { status: number; retryAfter?: string | undefined; body: string }> = {};

  before(async () => {
    database = await pg.createDatabase();
    await pg.stop('fast');
    times.spawned = performance.now();
    server = await startServer({ database: pg.url(database), args: ['--database-timeout', `${TIMEOUT_MS / 1000}s`] });
    times.listening = performance.now();
    for (const [key, path, init] of [
      ['healthz', '/healthz', {}],
      ['readyz', '/readyz', {}],
      [
        'create',
        '/plants',
        {
          method: 'POST',
          headers: { authorization: 'Bearer pst_x', 'content-type': 'application/json' },
          body: '{"id":1,"name":"Fern"}',
        },
      ],
      ['list', '/plants', { headers: { authorization: 'Bearer pst_x' } }],
    ] as const) {
      const answer = await oneShot(`${server.url}${path}`, init);
      whileDown[key] = {
        status: answer.status,
        retryAfter: answer.headers['retry-after'] as string,
        body: answer.text,
      };
    }
    await sleep(1_200);
    await pg.start();
    times.started = performance.now();
    for (;;) {
      const ready = await oneShot(`${server.url}/readyz`);
      if (ready.status === 200) break;
      await sleep(20);
    }
    times.ready = performance.now();
    while (!/^\s+pst_[\w-]+$/m.test(server.stderr())) await sleep(20);
    times.token = performance.now();
  });

  after(async () => {
    await server?.stop();
  });

  it('listens at once: /healthz 200, /readyz 503, every API request 503 with Retry-After and the Error body', () => {
    report('down at start', { listeningAfterSpawnMs: Math.round(times.listening - times.spawned) });
    assert.equal(whileDown.healthz!.status, 200);
    assert.equal(whileDown.readyz!.status, 503);
    for (const key of ['create', 'list']) {
      const answer = whileDown[key]!;
      assert.equal(answer.status, 503, `${key}: ${answer.body}`);
      assert.ok(Number(answer.retryAfter) >= 1, `${key}: Retry-After ${answer.retryAfter}`);
      const body = JSON.parse(answer.body) as { error: number; message: string };
      assert.equal(body.error, 503);
      assert.match(body.message, /database/);
    }
  });

  it('says why in a warn line at each try, 0.5 s doubling', () => {
    const lines = server
      .stdout()
      .split('\n')
      .filter((l) => l.includes(WAITING))
      .map((l) => JSON.parse(l) as { level: number; reason: string; retryInMs: number });
    assert.ok(lines.length >= 2, `${lines.length} warn lines`);
    for (const line of lines) {
      assert.equal(line.level, 40);
      assert.match(line.reason, /ECONNREFUSED|connect/);
    }
    assert.deepEqual(
      lines.map((l) => l.retryInMs),
      lines.map((_, i) => Math.min(500 * 2 ** i, 10_000)),
    );
    // Said once: not also as a database that stopped answering while serving.
    assert.doesNotMatch(server.stdout(), /database: not answering/);
  });

  it('serves as soon as the database answers, within the backoff in effect; migrations ran; the first-start token is printed then', async () => {
    const waits = server
      .stdout()
      .split('\n')
      .filter((l) => l.includes(WAITING))
      .map((l) => (JSON.parse(l) as { retryInMs: number }).retryInMs);
    const backoff = Math.max(...waits);
    const ready = times.ready - times.started;
    report('down at start', {
      readyAfterDatabaseStartedMs: Math.round(ready),
      tokenAfterDatabaseStartedMs: Math.round(times.token - times.started),
      backoffInEffectMs: backoff,
    });
    assert.ok(ready <= backoff + 1_000, `ready ${ready.toFixed(0)} ms after the database started`);
    const token = /^\s+(pst_[\w-]+)$/m.exec(server.stderr())![1]!;
    const created = await oneShot(`${server.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{"id":1,"name":"Fern"}',
    });
    assert.ok(created.status >= 200 && created.status < 300, created.text);
    assert.equal(await pg.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'plants'", database), '1');
    assert.equal(server.process.exitCode, null);
  });
});

/** Runs `serve` until it exits (or 15 s): its exit code, standard error, and how long it ran. */
function serveUntilExit(database: string) {
  return new Promise<{ code: number | null; stderr: string; ms: number }>((resolve) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [CLI, 'serve', '--port', '0', '--database', database, '--database-timeout', `${TIMEOUT_MS / 1000}s`],
      { env: { ...process.env, RATE_LIMIT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: performance.now() - started });
    });
  });
}

describe(
  'a permanent error at start exits 1 at once, with one line naming it (and how to mend it)',
  { skip: OWN_POSTGRES_SKIP },
  () => {
    let database = '';

    before(async () => {
      database = await pg.createDatabase();
      await pg.psql("CREATE ROLE fussy LOGIN PASSWORD 'right'");
      await pg.hbaFirst('host all fussy 127.0.0.1/32 scram-sha-256');
    });

    for (const [what, url, named] of [
      [
        'a refused password',
        () => `postgres://fussy:wrong@127.0.0.1:${pg.port}/${database}`,
        /password authentication failed/,
      ],
      [
        'a database that does not exist, with how to create it',
        () => `postgres://postgres@127.0.0.1:${pg.port}/no_such_database`,
        /database "no_such_database" does not exist: create it first, with createdb "no_such_database".*CREATE DATABASE/,
      ],
    ] as const) {
      it(what, async () => {
        const { code, stderr, ms } = await serveUntilExit(url());
        report('permanent error at start', { what, exitedAfterMs: Math.round(ms) });
        assert.equal(code, 1, stderr);
        const lines = stderr.trim().split('\n');
        assert.equal(lines.length, 1, stderr);
        assert.match(lines[0]!, named);
        assert.ok(ms < 10_000, `exited after ${ms.toFixed(0)} ms`);
      });
    }
  },
);
