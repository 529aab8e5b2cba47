/**
 * `node --import tsx bench/pg-round-trips.ts`: what one request costs PostgreSQL, counted rather
 * than timed (counts do not depend on how busy the machine is). The service (built dist/) talks to
 * PostgreSQL through a small TCP relay that reads the frontend protocol and counts, per request:
 *
 *   statements   Execute and simple Query messages (BEGIN and COMMIT included)
 *   round trips  Sync and simple Query messages: each is one wait for ReadyForQuery
 *   parses       Parse messages (a prepared statement is parsed once per connection, then reused)
 *
 * and the most connections the service had open at once.
 *
 * GET /plants?limit=10 and POST /plants are sent one at a time (no group commit to share), then
 * POST with 64 in flight, where one commit serves many creates.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { freePort, start } from './procs.js';
import { CLI } from './servers.js';

const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REQUESTS = 200;

const counts = { statements: 0, roundTrips: 0, parses: 0 };
/** Connections the service has open to PostgreSQL now, and the most it had at once. */
const connections = { open: 0, most: 0 };

/** Relays bytes both ways, reading the client's messages (type byte, int32 length) as they pass. */
function countingRelay(target: URL, port: number): net.Server {
  const relay = net.createServer((client) => {
    connections.most = Math.max(connections.most, ++connections.open);
    client.on('close', () => connections.open--);
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    let pending = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (!started) {
          // The startup message has no type byte; SSL requests and the like are its size too.
          if (pending.length < 4) break;
          const length = pending.readInt32BE(0);
          if (pending.length < length) break;
          pending = pending.subarray(length);
          started = true;
          continue;
        }
        if (pending.length < 5) break;
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) break;
        const type = String.fromCharCode(pending[0]!);
        if (type === 'E' || type === 'Q') counts.statements++;
        if (type === 'S' || type === 'Q') counts.roundTrips++;
        if (type === 'P') counts.parses++;
        pending = pending.subarray(1 + length);
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  relay.listen(port, '127.0.0.1');
  return relay;
}

async function measure(label: string, requests: number, inFlight: number, send: (i: number) => Promise<Response>) {
  const before = { ...counts };
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < requests) {
        const reply = await send(next++);
        await reply.arrayBuffer();
        if (reply.status !== 200) throw new Error(`${label}: ${reply.status}`);
      }
    }),
  );
  const per = (key: keyof typeof counts) => ((counts[key] - before[key]) / requests).toFixed(2);
  console.log(
    `${label.padEnd(34)} ${per('statements').padStart(6)} statements, ${per('roundTrips').padStart(6)} round trips, ` +
      `${per('parses').padStart(6)} parses per request`,
  );
}

async function main() {
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  const name = `plant_store_trips_${Date.now()}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const scratch = mkdtempSync(join(tmpdir(), 'plant-store-trips-'));
  const relayPort = await freePort();
  const relay = countingRelay(new URL(ADMIN_URL), relayPort);
  const database = new URL(ADMIN_URL);
  database.port = String(relayPort);
  database.pathname = `/${name}`;
  const port = await freePort();
  const server = await start({
    name: 'service',
    command: [process.execPath, CLI, 'serve', '--port', String(port), '--database', database.toString()],
    env: { RATE_LIMIT: '0', LOG_LEVEL: 'warn', PG_POOL_MAX: '10' },
    cpus: null,
    port,
    logFile: join(scratch, 'service.log'),
    probePath: '/healthz',
  });
  try {
    const token = await firstToken(database.toString());
    const auth = { authorization: `Bearer ${token}` };
    const post = (id: number) =>
      fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ id, name: `plant ${id}`, tag: 'counted' }),
      });
    console.log(`PostgreSQL round trips (${REQUESTS} requests each, pool of 10, after a warm-up):`);
    await measure('warm-up', 50, 8, (i) => post(1_000_000 + i));
    await measure('GET /plants?limit=10, one at a time', REQUESTS, 1, () =>
      fetch(`${server.url}/plants?limit=10`, { headers: auth }),
    );
    await measure('GET /plants/{id}, one at a time', REQUESTS, 1, (i) =>
      fetch(`${server.url}/plants/${1_000_000 + (i % 50)}`, { headers: auth }),
    );
    await measure('POST /plants, one at a time', REQUESTS, 1, (i) => post(i));
    await measure('POST /plants, 64 in flight', REQUESTS * 5, 64, (i) => post(10_000 + i));
    console.log(`connections to PostgreSQL: at most ${connections.most} at once (the pool allows 10)`);
  } finally {
    await server.stop();
    relay.close();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** A token made through the CLI, as an operator would (asynchronously: the relay runs in this process). */
async function firstToken(database: string): Promise<string> {
  const args = [CLI, 'token', 'create', '--account', 'trips', '--json', '--database', database];
  const { stdout } = await promisify(execFile)(process.execPath, args, { encoding: 'utf8' });
  return (JSON.parse(stdout) as { token: string }).token;
}

await main();
