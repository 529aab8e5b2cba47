/**
 * `npm run bench:ab -- get|post|by-id|mixed ROUNDS CLI...`: several builds of the service (each a copy of
 * `dist/`, given by its cli.js) under the bench's GET, POST, GET /plants/{id} or many-accounts mixed load, taking turns round after round,
 * each on a fresh copy of the same SQLite store; prints req/s, p99, CPU per request (and of it in the kernel),
 * durable commits and the page cache's hit rate of every run, and their medians. For deciding whether a change is faster on a shared machine, where one run of
 * each proves nothing. AB_SEC (seconds per run, default 5), AB_WARM (warm-up, WARMUP_SEC of rounds.ts), AB_ENV (JSON
 * environment for the servers).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseGenerator, load, type Workload } from './load.js';
import { LOAD_CPU, SERVER_CPU, pinSelf } from './machine.js';
import { isOneLoad, oneLoadSizes, oneLoadWorkload } from './one-load.js';
import { cpuMeter, freePort, metric, start } from './procs.js';
import { WARMUP_SEC, nextIdBase } from './rounds.js';
import { median } from './stats.js';
import { prepareSqlite } from './stores.js';

const [request, roundsText, ...clis] = process.argv.slice(2);
if (!isOneLoad(request) || !(Number(roundsText) > 0) || clis.length === 0) {
  process.stderr.write(
    'usage: npm run bench:ab -- get|post|by-id|mixed ROUNDS path/to/cli.js [path/to/other/cli.js ...]\n',
  );
  process.exit(2);
}
const seconds = Number(process.env.AB_SEC ?? 5);
const warmup = Number(process.env.AB_WARM ?? WARMUP_SEC);
/** Durable commits made during a run: how many writes each commit carried. */
const COMMITS = 'plant_store_storage_commits_total';
/** Pages of GET /plants asked of the page cache, by result: the mixed load's hit rate (BENCHMARKS.md). */
const LOOKUPS = 'plant_store_page_cache_lookups_total';
const env = JSON.parse(process.env.AB_ENV ?? '{}') as Record<string, string>;

pinSelf();
const scratch = mkdtempSync(join(tmpdir(), 'plant-store-ab-'));
const generator = chooseGenerator();
const runs = new Map<string, { rps: number; cpuUs: number; kernelUs: number; p99Ms: number }[]>(
  clis.map((cli) => [cli, []]),
);
try {
  const store = await prepareSqlite(scratch, oneLoadSizes(request));
  const workload = (): Workload => oneLoadWorkload(request, store, nextIdBase());
  for (let round = 0; round < Number(roundsText); round++) {
    for (const [i, cli] of clis.entries()) {
      const port = await freePort();
      const name = `build-${i}-round-${round}`;
      const proc = await start({
        name,
        command: [process.execPath, cli, 'serve', '--port', String(port), '--database', store.databaseFor(name)],
        cpus: SERVER_CPU,
        env: { RATE_LIMIT: '0', ...env },
        port,
        probePath: '/healthz',
        logFile: join(scratch, `${name}.log`),
      });
      const spec = (durationSec: number) => ({
        baseUrl: proc.url,
        workload: workload(),
        connections: 64,
        durationSec,
        cpus: LOAD_CPU,
      });
      if (warmup > 0) await load(generator, spec(warmup), scratch);
      const commitsBefore = await metric(proc.url, COMMITS);
      const hitsBefore = await metric(proc.url, LOOKUPS, 'result="hit"');
      const lookupsBefore = await metric(proc.url, LOOKUPS);
      const cpu = cpuMeter(proc.pid);
      const result = await load(generator, spec(seconds), scratch);
      const { cpuUs, kernelUs } = cpu(result.requests);
      const commits = (await metric(proc.url, COMMITS)) - commitsBefore;
      const hits = (await metric(proc.url, LOOKUPS, 'result="hit"')) - hitsBefore;
      const lookups = (await metric(proc.url, LOOKUPS)) - lookupsBefore;
      await proc.stop();
      runs.get(cli)!.push({ rps: result.rps, cpuUs, kernelUs, p99Ms: result.p99Ms });
      process.stdout.write(
        `${cli}: ${Math.round(result.rps)} req/s, p99 ${result.p99Ms.toFixed(2)} ms, ${cpuUs.toFixed(1)} us of CPU ` +
          `per request (kernel ${kernelUs.toFixed(1)}), ${commits} commits` +
          (lookups > 0 ? `, page cache hit rate ${((100 * hits) / lookups).toFixed(1)} %\n` : '\n'),
      );
    }
  }
  for (const [cli, list] of runs) {
    process.stdout.write(
      `${cli}: median ${Math.round(median(list.map((r) => r.rps)))} req/s, p99 ${median(list.map((r) => r.p99Ms)).toFixed(2)} ms, ` +
        `${median(list.map((r) => r.cpuUs)).toFixed(1)} us of CPU per request (lowest ${Math.min(...list.map((r) => r.cpuUs)).toFixed(1)}; ` +
        `kernel ${median(list.map((r) => r.kernelUs)).toFixed(1)})\n`,
    );
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
