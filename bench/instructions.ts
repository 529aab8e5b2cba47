/**
 * `npm run bench:instructions -- [requests] [warm-up requests]`: CPU instructions per request, counted by valgrind's
 * callgrind, for the ceiling (bench/ceiling.ts), the plain Fastify + better-sqlite3 peer and the
 * service, for GET /plants?limit=10 and a durable POST /plants. Timings move with the host and
 * with whatever else it runs; an instruction count does not: the same work counts the same total
 * whatever the machine does (hardware counters are not available on these VMs, callgrind is).
 *
 * Each server runs under callgrind (every thread of the process counted: the service's writer
 * thread too, and V8's compiler and collector threads; the kernel's work, an fsync, is not an
 * instruction of the process). After a warm-up (three times as many requests by default: V8 compiles
 * on threads of its own, and a warm-up shorter than its tiering counts that work: after 500 requests
 * the ceiling's GET counted 522,000 instructions a request, after 2,000 191,000), the counters are zeroed (`callgrind_control -z`), exactly `requests`
 * requests are sent, and the counters are dumped (`callgrind_control -d`): instructions per
 * request = the dump's instructions (every function's own, added up: instruction-steps.ts) / requests. Under callgrind a request takes about fifty times as
 * long, so the counts are of a server that is never saturated: 8 requests in flight.
 *
 * The dumps stay in bench/results/callgrind/ (`callgrind_annotate <file>` shows where a kind's
 * native instructions go, function by function), each beside the map of the code V8 generated
 * (`<dump>.perf-map`); the table, and the service's instructions by part of the process and by
 * JavaScript function (instruction-steps.ts), are printed and written to
 * bench/results/instructions-<time>.md; the counts also to its .json, which the next `npm run bench`
 * shows in BENCHMARKS.md beside its timings (report-vs-peers.ts).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMPILER_PART, partsOf, readDump, stepTables, totalOf } from './instruction-steps.js';
import { writeInstructionsReport } from './instructions-report.js';
import { SERVER_CPU } from './machine.js';
import { startServer, type ServerKind } from './servers.js';
import { prepareSqlite } from './stores.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REQUESTS = Number(process.argv[2] ?? 2_000);
const WARMUP = Number(process.argv[3] ?? 3 * REQUESTS);
const IN_FLIGHT = 8;
const KINDS: ServerKind[] = ['ceiling', 'fastify', 'service'];
/**
 * `INSTRUCTIONS_ONLY=service:post` (or `fastify:get`...) counts that one server and load alone, for
 * a quick comparison of two builds: its count is printed, and no report is written.
 */
const ONLY = process.env.INSTRUCTIONS_ONLY?.split(':') as [ServerKind, string] | undefined;
const OUT = join(ROOT, 'bench/results/callgrind');

type Load = 'GET /plants?limit=10' | 'POST /plants';
const LOADS: Load[] = ['GET /plants?limit=10', 'POST /plants'];

/** Exactly `count` requests, IN_FLIGHT at a time on kept-alive connections; fails on any non-2xx. */
async function send(url: string, load: Load, token: string, count: number, firstId: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
  let next = 0;
  const one = (i: number) =>
    new Promise<void>((resolve, reject) => {
      const post = load === 'POST /plants';
      const body = post ? JSON.stringify({ id: firstId + i, name: `counted plant ${firstId + i}`, tag: 'bench' }) : '';
      const request = http.request(
        `${url}${post ? '/plants' : '/plants?limit=10'}`,
        {
          method: post ? 'POST' : 'GET',
          agent,
          headers: {
            authorization: `Bearer ${token}`,
            ...(post && { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
          },
        },
        (response) => {
          response.resume();
          response.on('end', () =>
            response.statusCode! < 300 ? resolve() : reject(new Error(`${load}: ${response.statusCode}`)),
          );
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) await one(next++);
    }),
  );
  agent.destroy();
}

const scratch = mkdtempSync(join(tmpdir(), 'plant-store-instructions-'));
mkdirSync(OUT, { recursive: true });
const rows: Record<string, Record<Load, number>> = {};
/** The same without V8's optimising compiler (instruction-steps.ts, COMPILER_PART). */
const withoutCompiler: Record<string, Record<Load, number>> = {};
const steps: string[] = [];
/** Each server's instructions per request by thread (instruction-steps.ts, THREADS). */
const threads: Record<string, Record<Load, Record<string, number>>> = {};
try {
  const store = await prepareSqlite(scratch, { getPlants: 1_000, listPlants: 0, mixedAccounts: 0 });
  for (const kind of ONLY ? [ONLY[0]] : KINDS) {
    const prefix = join(OUT, `${kind}`);
    for (const old of readdirSync(OUT).filter((f) => f.startsWith(`${kind}.`))) rmSync(join(OUT, old));
    const server = await startServer(kind, store, {
      scratch,
      cpus: SERVER_CPU,
      wrap: [
        'valgrind',
        '--tool=callgrind',
        '--smc-check=all-non-file',
        '--dump-instr=yes',
        `--callgrind-out-file=${prefix}.%p`,
      ],
      // The generated code's map, by which instruction-steps.ts names it (that file says how).
      nodeArgs: ['--perf-basic-prof', '--no-compact-code-space'],
      wrapIsServer: true,
      readyWithinMs: 600_000,
    });
    try {
      rows[kind] = {} as Record<Load, number>;
      withoutCompiler[kind] = {} as Record<Load, number>;
      for (const [i, load] of LOADS.entries()) {
        if (ONLY && !load.toLowerCase().startsWith(ONLY[1])) continue;
        const token = load === 'POST /plants' ? store.tokens.post : store.tokens.get;
        const ids = 6_000_000_000_000 + i * 100_000_000;
        await send(server.url, load, token, WARMUP, ids);
        execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
        await send(server.url, load, token, REQUESTS, ids + WARMUP);
        const before = new Set(readdirSync(OUT));
        execFileSync('callgrind_control', ['-d', String(server.pid)], { stdio: 'ignore' });
        const dump = readdirSync(OUT).find((f) => f.startsWith(`${kind}.`) && !before.has(f));
        if (dump === undefined) throw new Error(`callgrind wrote no dump for ${kind}`);
        const perfMap = join(OUT, `${dump}.perf-map`);
        copyFileSync(`/tmp/perf-${server.pid}.map`, perfMap);
        const { self, threads: byThread } = readDump(join(OUT, dump), perfMap);
        const total = totalOf(self);
        rows[kind]![load] = total / REQUESTS;
        withoutCompiler[kind]![load] = (total - (partsOf(self).get(COMPILER_PART) ?? 0)) / REQUESTS;
        threads[kind] ??= {} as Record<Load, Record<string, number>>;
        threads[kind]![load] = Object.fromEntries([...byThread].map(([thread, count]) => [thread, count / REQUESTS]));
        if (kind === 'service') steps.push(`### ${load}\n\n${stepTables(self, REQUESTS)}`);
        process.stdout.write(
          `${kind} ${load}: ${Math.round(rows[kind]![load]).toLocaleString('en-US')} instructions a request, ` +
            `${Math.round(withoutCompiler[kind]![load]).toLocaleString('en-US')} without the compiler\n`,
        );
      }
    } finally {
      await server.stop();
      rmSync(`/tmp/perf-${server.pid}.map`, { force: true });
    }
  }
  if (!ONLY)
    writeInstructionsReport({
      requests: REQUESTS,
      warmup: WARMUP,
      inFlight: IN_FLIGHT,
      kinds: KINDS,
      loads: LOADS,
      rows,
      withoutCompiler,
      threads,
      steps,
    });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
