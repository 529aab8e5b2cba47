import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { assertPresent, HAPROXY } from '../helpers/binaries.js';
import { pg, withFreshStore } from '../helpers/engines.js';
import { allPages } from '../helpers/http.js';
import { MixedLoad, tally } from '../helpers/mixed-load.js';
import { freePort } from '../helpers/ports.js';
import { startServer, type RunningServer } from '../helpers/server.js';
import { openFeed, type SseMessage } from '../helpers/sse.js';
import { eventually } from '../helpers/wait.js';

/**
 * docs/operating.md#behind-a-balancer: three instances on one PostgreSQL behind a real HAProxy that
 * retries only connection failures, run with the configuration the manual shows, and replaced one
 * at a time (SIGTERM, then a new process on the same port) under keep-alive clients creating,
 * reading and patching plants and a change feed followed through the balancer. Every request is
 * counted: none may be reset, time out or get an unexpected status.
 */

const INSTANCES = 3;
/** The server's default drain, given explicitly: test servers run without one (helpers/server.ts). */
const SHUTDOWN_DELAY = '5s';

/** The manual's HAProxy configuration, with this test's ports and a stats socket to see the checks. */
function haproxyConfig(port: number, instancePorts: number[], statsSocket: string): string {
  const manual = readFileSync(new URL('../../docs/operating.md', import.meta.url), 'utf8');
  const shown = /```haproxy\n([\s\S]*?)```/.exec(manual)?.[1];
  assert.ok(shown, 'docs/operating.md shows no HAProxy configuration');
  let server = 0;
  const config = shown
    .replace('bind 127.0.0.1:8080', `bind 127.0.0.1:${port}`)
    .replace(
      /server (\w+) 10\.0\.0\.\d+:8080/g,
      (_, name: string) => `server ${name} 127.0.0.1:${instancePorts[server++]}`,
    );
  assert.equal(server, INSTANCES, 'the manual names three instances');
  return `global\n    stats socket ${statsSocket} level admin\n\n${config}`;
}

/** Asks HAProxy's stats socket one command. */
function ask(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = net.createConnection(socket);
    let answer = '';
    connection.on('connect', () => connection.end(`${command}\n`));
    connection.on('data', (chunk) => (answer += chunk.toString()));
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
  });
}

/** The health of each server as HAProxy's checks see it: `UP`, `DOWN`, ... by name. */
async function serverStates(socket: string): Promise<Record<string, string>> {
  const rows = (await ask(socket, 'show stat')).split('\n').map((line) => line.split(','));
  const [name, kind, status] = ['svname', 'type', 'status'].map((column) => rows[0]!.indexOf(column));
  const states: Record<string, string> = {};
  // Type 2: a server (0 and 1 are the frontend and the backend).
  for (const row of rows.slice(1)) if (row[kind!] === '2') states[row[name!]!] = row[status!]!;
  return states;
}

async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 20_000) {
  await eventually(what, async () => (await condition().catch(() => false)) || undefined, timeoutMs, 50);
}

/**
 * Follows the change feed through the balancer, reconnecting with its cursor whenever a stream ends.
 * `ready()` once the first stream is open: the events after it are those acknowledged later.
 */
function followFeed(url: string, token: string) {
  const seen: SseMessage[] = [];
  let open = true;
  let ready = false;
  const following = (async () => {
    let cursor: string | undefined;
    for (let streams = 0; open && streams < 50; streams++) {
      const feed = await openFeed(url, { token, lastEventId: cursor });
      assert.equal(feed.status, 200);
      try {
        while (open) {
          const message = await feed.next(200).catch(() => undefined);
          if (message === null) break;
          if (message === undefined) continue;
          cursor = message.id ?? cursor;
          if (message.event === 'ready') ready = true;
          else seen.push(message);
        }
      } finally {
        feed.close();
      }
    }
  })();
  return {
    seen,
    ready: () => ready,
    async close() {
      open = false;
      await following;
    },
  };
}

describe(
  'a rolling restart behind HAProxy (retries on connection failures only) loses no request',
  {
    skip: HAPROXY.skip || pg.skip,
    timeout: 300_000,
  },
  () => {
    it('replaces three instances one at a time under a mixed load: 0 resets, 0 timeouts, 0 unexpected statuses, the feed exactly once', async (t: TestContext) => {
      assertPresent(HAPROXY);
      await withFreshStore(pg, async (database) => {
        const dir = mkdtempSync(join(tmpdir(), 'plant-store-haproxy-'));
        const ports = await Promise.all(Array.from({ length: INSTANCES }, freePort));
        const start = (slot: number) =>
          startServer({ database, args: ['--port', String(ports[slot]), '--shutdown-delay', SHUTDOWN_DELAY] });
        const instances: RunningServer[] = [await start(0)];
        instances.push(...(await Promise.all([start(1), start(2)])));
        const token = instances[0]!.firstToken!;
        const names = ['a', 'b', 'c'];

        const balancerPort = await freePort();
        const stats = join(dir, 'stats.sock');
        writeFileSync(join(dir, 'haproxy.cfg'), haproxyConfig(balancerPort, ports, stats));
        let haproxyOutput = '';
        const haproxy: ChildProcess = spawn(HAPROXY.path, ['-db', '-f', join(dir, 'haproxy.cfg')], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        haproxy.stdout!.on('data', (chunk) => (haproxyOutput += chunk));
        haproxy.stderr!.on('data', (chunk) => (haproxyOutput += chunk));
        const allUp = async () => Object.values(await serverStates(stats)).filter((s) => s === 'UP').length === 3;
        const url = `http://127.0.0.1:${balancerPort}`;
        let load: MixedLoad | undefined;
        let feed: ReturnType<typeof followFeed> | undefined;
        try {
          await until('three instances up behind HAProxy', allUp);
          feed = followFeed(url, token);
          const following = feed;
          await until('a change feed open', async () => following.ready());
          load = new MixedLoad({ url, token, clients: 12 });
          const running = load;
          const answers = async (count: number) => running.outcomes.length >= count;
          await until('under load', () => answers(150));

          const rolls: Array<{ instance: string; stopMs: number; longestMs: number }> = [];
          for (let slot = 0; slot < INSTANCES; slot++) {
            const signalAt = Date.now();
            assert.equal(await instances[slot]!.stop('SIGTERM'), 0, instances[slot]!.output());
            const stopMs = Date.now() - signalAt;
            instances[slot] = await start(slot);
            await until(`${names[slot]} up again`, async () => (await serverStates(stats))[names[slot]!] === 'UP');
            rolls.push({ instance: names[slot]!, stopMs, longestMs: running.longestBetween(signalAt, Date.now()) });
          }
          const afterRolls = running.outcomes.length + 150;
          await until('more answers after the rolls', () => answers(afterRolls));
          await load.stop();

          const failures = load.failures();
          const counts = tally(load.outcomes);
          assert.deepEqual(failures, [], `${JSON.stringify(counts)}\n${haproxyOutput}`);

          const listed = new Set((await allPages(token, `${url}/plants?limit=1000`)).names);
          for (const id of load.acknowledged) assert.ok(listed.has(`p${id}`), `plant ${id} acknowledged, not listed`);

          const patched = load.outcomes.filter((o) => o.operation === 'patch').length;
          const expected = load.acknowledged.size + patched;
          const seen = feed.seen;
          // The feed follows through the balancer at its own pace: on a busy machine it may trail the load.
          await until('the feed caught up', async () => seen.length >= expected, 30_000).catch(() => {});
          await feed.close();
          feed = undefined;
          assert.equal(new Set(seen.map((m) => m.id)).size, seen.length, 'an event twice in the feed');
          const created = seen.filter((m) => m.event === 'plant.created').map((m) => /"id":(-?\d+)/.exec(m.data)?.[1]);
          const missing = [...load.acknowledged].filter((id) => !created.includes(id));
          assert.deepEqual(
            missing,
            [],
            `${seen.length} of ${expected} events; the last: ${JSON.stringify(seen.at(-1))}`,
          );
          assert.deepEqual(new Set(created), load.acknowledged);
          assert.equal(created.length, load.acknowledged.size, 'a create twice in the feed');
          assert.equal(seen.filter((m) => m.event === 'plant.updated').length, patched);

          t.diagnostic(
            `requests: ${load.outcomes.length} (${JSON.stringify(counts)}), feed events: ${seen.length}; ` +
              rolls.map((r) => `${r.instance}: stopped in ${r.stopMs} ms, longest answer ${r.longestMs} ms`).join('; '),
          );
        } finally {
          await load?.stop();
          await feed?.close();
          haproxy.kill('SIGKILL');
          await Promise.all(instances.map((instance) => instance.stop()));
          rmSync(dir, { recursive: true, force: true });
        }
      });
    });
  },
);
