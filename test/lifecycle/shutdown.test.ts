import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { get, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ENGINES, sqlite, withFreshStore } from '../helpers/engines.js';
import { allPages, call, listPlants } from '../helpers/http.js';
import { MixedLoad, PATCHED_TAG, tally } from '../helpers/mixed-load.js';
import { freePort } from '../helpers/ports.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { eventually } from '../helpers/wait.js';

/** A raw connection to the server, collecting what it answers. */
class Connection {
  readonly socket: Socket;
  received = '';
  closed: Promise<void>;

  constructor(server: RunningServer) {
    this.socket = connect(Number(new URL(server.url).port), '127.0.0.1');
    this.socket.on('data', (chunk) => (this.received += chunk.toString()));
    this.socket.on('error', () => {});
    this.closed = new Promise((resolve) => this.socket.on('close', () => resolve()));
  }

  async waitFor(text: string, timeoutMs = 20_000) {
    await eventually(
      () => `"${text}" in ${JSON.stringify(this.received)}`,
      () => this.received.includes(text) || undefined,
      timeoutMs,
      10,
    );
  }

  /** The final answer's status line and headers (after any 100 Continue). */
  answer(): { status: number; headers: string } {
    const head = this.received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '').split('\r\n\r\n', 1)[0]!;
    return { status: Number(head.split(' ')[1]), headers: head.toLowerCase() };
  }
}

/** A create whose headers the server has taken in (it answered 100 Continue); its body is held back. */
async function acceptedCreate(server: RunningServer, token: string, id: number) {
  const connection = new Connection(server);
  const body = JSON.stringify({ id, name: `p${id}` });
  connection.socket.write(
    `POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
  );
  await connection.waitFor('100 Continue');
  return { connection, sendBody: () => connection.socket.write(body) };
}

function logLines(server: RunningServer): Array<Record<string, unknown>> {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

for (const engine of ENGINES) {
  describe(`SIGTERM: a request accepted before the signal is answered, with 64 connections busy (${engine.name})`, () => {
    it('answers all 64 with 200 and Connection: close, exits 0, and keeps every plant', async () => {
      await withFreshStore(engine, async (database) => {
        const server = await startServer({ database, args: ['--shutdown-timeout', '30000'] });
        const token = server.firstToken!;
        const creates = await Promise.all(Array.from({ length: 64 }, (_, id) => acceptedCreate(server, token, id)));
        const exit = server.stop('SIGTERM');
        await sleep(300);
        for (const create of creates) create.sendBody();
        await Promise.all(creates.map((create) => create.connection.closed));
        for (const { connection } of creates) {
          assert.equal(connection.answer().status, 200, connection.received);
          assert.match(connection.answer().headers, /\r\nconnection: close/);
        }
        assert.equal(await exit, 0);
        assert.equal(logLines(server).at(-1)?.msg, 'stopped', server.stdout());

        const restarted = await startServer({ database });
        try {
          assert.equal(((await listPlants(restarted.url, token)).json as unknown[]).length, 64);
        } finally {
          await restarted.stop();
        }
      });
    });

    it('restarted on its port under keep-alive clients, answers every request it accepted and keeps every acknowledged plant', async () => {
      await withFreshStore(engine, async (database) => {
        const port = String(await freePort());
        const args = ['--port', port, '--shutdown-delay', '1s'];
        const server = await startServer({ database, args });
        const token = server.firstToken!;
        const load = new MixedLoad({ url: server.url, token, clients: 16, retryRefused: true });
        await untilAnswered(load, 300);
        assert.equal(await server.stop('SIGTERM'), 0, server.output());
        const restarted = await startServer({ database, args });
        try {
          await untilAnswered(load, load.outcomes.length + 300);
          await load.stop();
          const stored = new Set((await allPages(token, `${restarted.url}/plants?limit=1000`)).names);
          for (const id of load.acknowledged) assert.ok(stored.has(`p${id}`), `plant ${id} lost`);
          await assertOnlyUnacceptedFailed(load, restarted.url, token, stored);
        } finally {
          await restarted.stop();
        }
      });
    });
  });
}

/**
 * Refused connections were sent again until the new process took them (never accepted, nothing
 * lost), and every request the process read was answered. What remains is the kernel's: a
 * connection it completed in the instant between the process's last accept and the listening
 * socket's close is reset by the kernel with that socket (docs/operating.md#stopping). Such a
 * failure is a reset of a new connection, never a kept-alive one (the drain's answers close those),
 * and the request had no effect: the process never read it.
 */
async function assertOnlyUnacceptedFailed(load: MixedLoad, url: string, token: string, stored: Set<string>) {
  const failures = load.failures();
  const counts = JSON.stringify(tally(load.outcomes));
  assert.deepEqual(
    failures.filter((f) => f.result !== 'ECONNRESET' || f.reused),
    [],
    counts,
  );
  assert.ok(failures.length <= 16, counts); // one per client at most: the instant of the close
  for (const failure of failures) {
    if (failure.operation === 'create') assert.ok(!stored.has(`p${failure.id}`), `reset create ${failure.id} stored`);
    if (failure.operation === 'patch') {
      const plant = (await call(`${url}/plants/${failure.id}`, { token })).json as { tag?: string };
      assert.notEqual(plant.tag, PATCHED_TAG, `reset patch of ${failure.id} applied`);
    }
  }
}

/** Waits (at most 30 s) until the load has `count` outcomes. */
async function untilAnswered(load: MixedLoad, count: number) {
  await eventually(
    () => `${count} answers (${load.outcomes.length} so far)`,
    () => load.outcomes.length >= count || undefined,
    30_000,
    20,
  );
}

describe('SIGTERM: drain for --shutdown-delay, then stop', () => {
  it('answers /readyz 503 at once, serves old and new connections with Connection: close, then exits 0', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database, args: ['--shutdown-delay', '2s'] });
      const keptAlive = new Connection(server);
      keptAlive.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await keptAlive.waitFor('"status":"ok"');
      assert.doesNotMatch(keptAlive.answer().headers, /connection: close/);
      const signalAt = Date.now();
      const exit = server.stop('SIGTERM');
      await sleep(200);
      const readyz = await getOnce(`${server.url}/readyz`, {});
      assert.equal(readyz.statusCode, 503);
      assert.equal(readyz.headers.connection, 'close');
      // A new connection is still accepted and served.
      const plants = await getOnce(`${server.url}/plants`, { authorization: `Bearer ${server.firstToken}` });
      assert.equal(plants.statusCode, 200);
      assert.equal(plants.headers.connection, 'close');
      // The kept-alive connection's next request is answered, and its connection then closed.
      keptAlive.received = '';
      keptAlive.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      await keptAlive.closed;
      assert.equal(keptAlive.answer().status, 200, keptAlive.received);
      assert.match(keptAlive.answer().headers, /\r\nconnection: close/);
      assert.equal(await exit, 0);
      const took = Date.now() - signalAt;
      assert.ok(took >= 2_000 && took < 6_000, `exited ${took} ms after the signal`);
      assert.ok(logLines(server).some((line) => line.msg === 'stopping: draining, then finishing in-flight requests'));
    });
  });

  it('stops at once on a second SIGTERM during the drain (exit 1)', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database, args: ['--shutdown-delay', '30s'] });
      const signalAt = Date.now();
      server.process.kill('SIGTERM');
      await sleep(300);
      assert.equal(await server.stop('SIGTERM'), 1);
      assert.ok(Date.now() - signalAt < 5_000);
      assert.match(server.output(), /second SIGTERM, exiting/);
    });
  });

  it('does not drain on SIGINT (a Ctrl-C): exits 0 at once', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database, args: ['--shutdown-delay', '30s'] });
      const signalAt = Date.now();
      assert.equal(await server.stop('SIGINT'), 0);
      assert.ok(Date.now() - signalAt < 5_000, `exited ${Date.now() - signalAt} ms after the signal`);
    });
  });
});

describe('SIGTERM: idle connections are closed at once', () => {
  it('exits 0 at once despite a kept-alive connection and one that never sent a request', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database, args: ['--shutdown-timeout', '20000'] });
      const keptAlive = new Connection(server);
      keptAlive.socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      await keptAlive.waitFor('"status":"ok"');
      const silent = new Connection(server); // a browser's preconnect, a balancer's probe
      await sleep(200);
      const signalAt = Date.now();
      assert.equal(await server.stop('SIGTERM'), 0);
      // Before: 5 s (the keep-alive timeout) for the first, the shutdown timeout (exit 1) for the second.
      assert.ok(Date.now() - signalAt < 3_500, `exited ${Date.now() - signalAt} ms after the signal`);
      await Promise.all([keptAlive.closed, silent.closed]);
    });
  });
});

describe('SIGTERM: a connection still sending its headers has 2 s to finish them', () => {
  it('answers one that never finishes 503 after the grace and exits 0, long before the shutdown timeout', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database, args: ['--shutdown-timeout', '20000'] });
      const stalled = new Connection(server);
      stalled.socket.write('GET /plants HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      await sleep(200);
      const signalAt = Date.now();
      assert.equal(await server.stop('SIGTERM'), 0);
      const took = Date.now() - signalAt;
      assert.ok(took >= 1_800 && took < 6_000, `exited ${took} ms after the signal`);
      await stalled.closed;
      assert.equal(stalled.answer().status, 503, stalled.received);
      assert.match(stalled.received, /"message":"the server is stopping: send the request again"/);
    });
  });
});

describe('SIGTERM: the process waits for the slowest request, then exits 0', () => {
  it('answers a request whose body arrives 1.5 s after the signal, with Connection: close, then exits', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database, args: ['--shutdown-timeout', '20000'] });
      const slow = await acceptedCreate(server, server.firstToken!, 1);
      // A probe whose request has begun (headers not finished) when the signal comes.
      const probe = new Connection(server);
      probe.socket.write('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      await sleep(200);
      const exit = server.stop('SIGTERM');
      await sleep(300);
      probe.socket.write('\r\n');
      await probe.closed;
      assert.equal(probe.answer().status, 503, probe.received);
      await sleep(1_200);
      const answeredAt = Date.now();
      slow.sendBody();
      await slow.connection.closed;
      assert.equal(slow.connection.answer().status, 200, slow.connection.received);
      assert.match(slow.connection.answer().headers, /\r\nconnection: close/);
      assert.equal(await exit, 0);
      assert.ok(Date.now() - answeredAt < 3_000, `exited ${Date.now() - answeredAt} ms after the last answer`);

      const lines = logLines(server);
      assert.equal(lines.at(-1)?.msg, 'stopped');
      // The 503 of /readyz while stopping is expected: a warning without a stack, not an error.
      const readyz = lines.filter((line) => line.reqId === lines.find((l) => l.url === '/readyz')?.reqId);
      assert.ok(readyz.length >= 1, server.stdout());
      for (const line of readyz) {
        assert.ok((line.level as number) <= 40, JSON.stringify(line));
        assert.ok(!JSON.stringify(line).includes('stack'), JSON.stringify(line));
      }
    });
  });
});

function getOnce(url: string, headers: Record<string, string>): Promise<IncomingMessage> {
  return new Promise((resolve, reject) =>
    get(url, { headers, agent: false }, (response) => response.resume().on('end', () => resolve(response))).on(
      'error',
      reject,
    ),
  );
}

describe('SIGTERM: every log line is written before the process exits, "stopped" last', () => {
  it('writes the request lines, the stopping line and the stopped line, though lines are buffered', async () => {
    await withFreshStore(sqlite, async (database) => {
      const server = await startServer({ database });
      const headers = { authorization: `Bearer ${server.firstToken}`, connection: 'close' };
      for (let i = 0; i < 3; i++) assert.equal((await getOnce(`${server.url}/plants`, headers)).statusCode, 200);
      assert.equal(await server.stop('SIGTERM'), 0);
      const lines = logLines(server);
      assert.equal(lines.filter((line) => line.msg === 'request').length, 3, server.stdout());
      assert.ok(lines.some((line) => line.msg === 'stopping: finishing in-flight requests'));
      assert.equal(lines.at(-1)?.msg, 'stopped');
    });
  });
});

describe('npm start under a supervisor: SIGTERM to npm reaches the server', () => {
  it('stops the server (no process left behind) when npm itself is signalled', async () => {
    await withFreshStore(sqlite, async (database) => {
      const root = fileURLToPath(new URL('../..', import.meta.url));
      const npm = spawn('npm', ['start', '--', '--port', '0', '--database', database], {
        cwd: root,
        env: { ...process.env, RATE_LIMIT: '0', SHUTDOWN_DELAY: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      npm.stdout.on('data', (chunk) => (output += chunk));
      npm.stderr.on('data', (chunk) => (output += chunk));
      const npmExited = new Promise((resolve) => npm.on('exit', resolve));
      await eventually(
        () => `the server listening:\n${output}`,
        () => output.includes('Server listening') || undefined,
        20_000,
        50,
      );
      const serverPid = Number(/"pid":(\d+)[^\n]*Server listening/.exec(output)?.[1]);
      assert.ok(serverPid > 0, output);
      npm.kill('SIGTERM');
      await npmExited;
      await eventually('the server to exit after npm', () => !isAlive(serverPid) || undefined, 5_000, 50);
      assert.match(output, /"msg":"stopped"/);
    });
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
