/**
 * `node --import tsx bench/webhooks.ts` (after `npm run build`): what webhooks cost the API.
 * Durable POST /plants at 64 connections, side by side in one run, on three servers that differ
 * only in their account's webhook endpoint:
 *   (a) none, (b) one subscribed endpoint answering 200 at once, (c) one that never answers.
 * Each server has its own SQLite store in a temporary directory; the receivers run in this
 * process. Rounds alternate a b c a b c ... after a warm-up of each; figures are medians over the
 * rounds, and the spread (min-max) of each is printed to show how noisy the machine was.
 * Server on core 0, load generator on core 1 when the machine has two cores (as bench/run.ts).
 *
 * Knobs: BENCH_DURATION (s per run, default 5), BENCH_WARMUP (s, 3), BENCH_ROUNDS (3).
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../src/auth/api-tokens.js';
import { openStorage } from '../src/storage/open.js';
import { chooseGenerator, hasCommand, load, type LoadResult } from './load.js';
import { cpuSeconds, memory, startService, type Proc } from './procs.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = 64;

const canPin = availableParallelism() >= 2 && hasCommand('taskset');
const SERVER_CPU = canPin ? '0' : null;
const LOAD_CPU = canPin ? '1' : null;
const generator = chooseGenerator();
const scratch = mkdtempSync(join(tmpdir(), 'plant-store-webhook-bench-'));
const log = (line: string) => process.stdout.write(line + '\n');

/** A receiver on 127.0.0.1 that answers 200 at once, or never (its sockets are cut at the end). */
async function receiver(answers: boolean) {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = http.createServer((request, response) => {
    requests++;
    request.resume();
    if (answers) request.on('end', () => response.end());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests: () => requests,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Scenario {
  name: string;
  server: Proc;
  token: string;
  runs: LoadResult[];
  /** Server CPU seconds per create: during the run, and including the sending of its events after it. */
  cpuPerCreate: number[];
  cpuPerCreateWithDrain: number[];
}

async function scenario(name: string, hookUrl: string | null): Promise<Scenario> {
  const database = `sqlite:${join(scratch, `${name}.db`)}`;
  const storage = await openStorage(database);
  const { secret: token } = await issueToken(storage, 'bench');
  await storage.close();
  const server = await startService(name, {
    database,
    logFile: join(scratch, `${name}.log`),
    cpus: SERVER_CPU,
    env: { WEBHOOK_ALLOW_PRIVATE: '1', LOG_LEVEL: 'warn' },
  });
  if (hookUrl !== null) {
    const response = await fetch(`${server.url}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: hookUrl }),
    });
    if (response.status !== 201) throw new Error(`${name}: POST /webhooks answered ${response.status}`);
  }
  return { name, server, token, runs: [], cpuPerCreate: [], cpuPerCreateWithDrain: [] };
}

let nextIdBase = 0;

function post(s: Scenario, durationSec: number): Promise<LoadResult> {
  nextIdBase += 10_000_000_000_000;
  return load(
    generator,
    {
      url: `${s.server.url}/plants`,
      method: 'POST',
      token: s.token,
      connections: CONNECTIONS,
      durationSec,
      idBase: nextIdBase,
      cpus: LOAD_CPU,
    },
    scratch,
  );
}

async function metric(s: Scenario, line: RegExp): Promise<number> {
  const text = await (await fetch(`${s.server.url}/metrics`)).text();
  return Number(line.exec(text)?.[1] ?? NaN);
}

/**
 * Waits until the answering endpoint's backlog is sent: the deliveries of one run must not eat
 * into the CPU of the next (all servers share core 0). Under full POST load the deliverer falls
 * behind (it is bounded and the API comes first), so the backlog is sent after each run.
 */
async function drain(s: Scenario) {
  const deadline = Date.now() + 300_000;
  while ((await metric(s, PENDING)) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], digits: number) =>
  `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`;
const us = (seconds: number) => (seconds * 1e6).toFixed(0);
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
const DELIVERED = /^plant_store_webhook_deliveries_total\{outcome="delivered"\} (\S+)$/m;
const PENDING = /^plant_store_webhook_pending_events (\S+)$/m;

async function main() {
  log(`webhook bench: ${ROUNDS} rounds of ${DURATION} s, ${CONNECTIONS} connections, ${generator}, pinned: ${canPin}`);
  const fast = await receiver(true);
  const hanging = await receiver(false);
  const scenarios = [
    await scenario('none', null),
    await scenario('answering', fast.url),
    await scenario('hanging', hanging.url),
  ];
  const [none, answering, hung] = scenarios as [Scenario, Scenario, Scenario];
  try {
    for (const s of scenarios) await post(s, WARMUP);
    await drain(answering);
    const drainSeconds: number[] = [];
    const rssBefore = memory(hung.server.pid).rss;
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of scenarios) {
        const cpuBefore = cpuSeconds(s.server.pid);
        const run = await post(s, DURATION);
        const cpuRun = cpuSeconds(s.server.pid) - cpuBefore;
        if (run.failures > 0) throw new Error(`${s.name}: ${run.failures} failed requests`);
        const started = Date.now();
        await drain(answering);
        if (s === answering) drainSeconds.push((Date.now() - started) / 1000);
        s.runs.push(run);
        s.cpuPerCreate.push(cpuRun / run.requests);
        s.cpuPerCreateWithDrain.push((cpuSeconds(s.server.pid) - cpuBefore) / run.requests);
        log(
          `  round ${round + 1} ${s.name.padEnd(9)} ${run.rps.toFixed(0).padStart(6)} req/s` +
            `  p99 ${run.p99Ms.toFixed(1).padStart(6)} ms  CPU/create ${us(s.cpuPerCreate.at(-1)!)} us` +
            ` (${us(s.cpuPerCreateWithDrain.at(-1)!)} with its events sent)`,
        );
      }
    }
    const rssAfter = memory(hung.server.pid).rss;

    const figures = new Map(
      scenarios.map((s) => [
        s,
        {
          rps: median(s.runs.map((r) => r.rps)),
          p99: median(s.runs.map((r) => r.p99Ms)),
          cpu: median(s.cpuPerCreate),
          cpuAll: median(s.cpuPerCreateWithDrain),
        },
      ]),
    );
    const f = (s: Scenario) => figures.get(s)!;
    log('');
    log(
      '| Endpoint of the account | POST req/s, median (min-max) | p99 ms, median (min-max) | server CPU us per create (with its events sent) |',
    );
    log('|---|---|---|---|');
    for (const [name, s] of [
      ['(a) none', none],
      ['(b) one, answering 200', answering],
      ['(c) one, never answering', hung],
    ] as const) {
      log(
        `| ${name} | ${f(s).rps.toFixed(0)} (${spread(
          s.runs.map((r) => r.rps),
          0,
        )}) ` +
          `| ${f(s).p99.toFixed(1)} (${spread(
            s.runs.map((r) => r.p99Ms),
            1,
          )}) ` +
          `| ${us(f(s).cpu)} (${us(f(s).cpuAll)}) |`,
      );
    }
    // Ratios within each round (runs seconds apart share the machine's conditions), then their median.
    const ratio = (s: Scenario, pick: (r: LoadResult) => number) => {
      const each = s.runs.map((r, i) => pick(r) / pick(none.runs[i]!));
      return `${median(each).toFixed(2)} (rounds: ${spread(each, 2)})`;
    };
    log('');
    log(`throughput (b)/(a): ${ratio(answering, (r) => r.rps)}   target >= 0.90`);
    log(`throughput (c)/(a): ${ratio(hung, (r) => r.rps)}`);
    log(`p99 (b)/(a): ${ratio(answering, (r) => r.p99Ms)}`);
    log(`p99 (c)/(a): ${ratio(hung, (r) => r.p99Ms)}   target <= 1.2`);
    log(
      `CPU per create (b)/(a): ${(f(answering).cpu / f(none).cpu).toFixed(2)} during the run, ` +
        `${(f(answering).cpuAll / f(none).cpuAll).toFixed(2)} counting the sending of its events afterwards; ` +
        `(c)/(a): ${(f(hung).cpu / f(none).cpu).toFixed(2)}`,
    );
    log('');
    log(
      `(b) receiver got ${fast.requests()} requests, delivered counter ${await metric(answering, DELIVERED)}; ` +
        `after each run the backlog took ${drainSeconds.map((d) => d.toFixed(1)).join(', ')} s to send`,
    );
    log(
      `(c) receiver got ${hanging.requests()} requests (attempts in flight are bounded by --webhook-concurrency), ` +
        `${await metric(hung, PENDING)} events pending; server RSS ${mib(rssBefore)} MiB after warm-up, ` +
        `${mib(rssAfter)} MiB after the rounds`,
    );
  } finally {
    // Receivers first: a hung attempt then ends at once instead of holding its server's shutdown.
    await fast.close();
    await hanging.close();
    await Promise.all(scenarios.map((s) => s.server.stop()));
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();
