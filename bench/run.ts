/**
 * `npm run bench`: the real service (built `dist/`) against a ceiling (bench/ceiling.ts) and plain
 * Fastify and Express peers (bench/peers/), side by side in the same rounds, in each scenario of
 * bench/scenarios/. Writes bench/results/<timestamp>.json, and for a full run bench/results/chart.svg
 * and BENCHMARKS.md.
 *
 * Server on core 0, load generator on core 1 (taskset) when the machine has two cores.
 *
 * Knobs, as flags or environment variables (flags win):
 *   --rounds N      BENCH_ROUNDS    measured runs per server per scenario (default 4)
 *   --duration S    BENCH_DURATION  seconds per measured run (default 5)
 *   --warmup S      BENCH_WARMUP    seconds of warm-up per server per scenario (default WARMUP_SEC, 10)
 *   --only a,b      BENCH_ONLY      scenarios to run (default all: see SCENARIOS)
 *   BENCH_PG_URL    a PostgreSQL database whose user may CREATE DATABASE (default the tests' one)
 *   BENCH_LOAD=autocannon   use autocannon even when wrk is installed
 *   BENCH_KEEP=1    keep the temporary directory (stores, server logs, strace output)
 * `--render bench/results/<file>.json` renders BENCHMARKS.md and the chart again from a saved run.
 *
 * A scenario is a function (Context) => ScenarioResult; to add one, write it in bench/scenarios/
 * and list it in SCENARIOS. report.ts renders any scenario's servers and ratios.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderChart } from './chart.js';
import { newestInstructionCounts } from './instructions-report.js';
import { chooseGenerator } from './load.js';
import { LOAD_CPU, SERVER_CPU, canPin, describeMachine, fsyncLatency, loadAverage, pinSelf } from './machine.js';
import type { Results } from './report-format.js';
import { renderMarkdown } from './report.js';
import { WARMUP_SEC, type Context, type ScenarioResult } from './rounds.js';
import { authFlood } from './scenarios/auth-flood.js';
import { feed, pgFeed } from './scenarios/feed.js';
import { byId, byIdPlants } from './scenarios/by-id.js';
import { findingPostgres, findingSqlite } from './scenarios/finding.js';
import { listing, type ListingFigures } from './scenarios/listing.js';
import { mixed } from './scenarios/mixed.js';
import { pgbouncerGet, pgbouncerPost } from './scenarios/pgbouncer.js';
import { getPostgres, getSqlite, postPostgres, postSqlite } from './scenarios/requests.js';
import { slowDisk } from './scenarios/slow-disk.js';
import { webhookDeliveryPostgres, webhookDeliverySqlite } from './scenarios/webhook-delivery.js';
import { webhooks } from './scenarios/webhooks.js';
import { workers } from './scenarios/workers.js';
import { preparePostgres, prepareSqlite, type BenchStore, type Sizes } from './stores.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** In the order they run. */
const SCENARIOS: Record<string, (ctx: Context) => Promise<ScenarioResult>> = {
  listing,
  get: getSqlite,
  post: postSqlite,
  'by-id': byId,
  webhooks,
  'webhook-delivery': webhookDeliverySqlite,
  feed,
  'auth-flood': authFlood,
  'slow-disk': slowDisk,
  mixed,
  finding: findingSqlite,
  'pg-get': getPostgres,
  'pg-post': postPostgres,
  'pg-finding': findingPostgres,
  'pg-bouncer-get': pgbouncerGet,
  'pg-bouncer-post': pgbouncerPost,
  'pg-feed': pgFeed,
  workers,
  // Last: it leaves delivered events in the one PostgreSQL database.
  'pg-webhook-delivery': webhookDeliveryPostgres,
};

/** byIdPlants depends on the settings (by-id.ts): its DELETE range is sized from a run's length. */
const SIZES: Omit<Required<Sizes>, 'byIdPlants'> = {
  getPlants: 1_000,
  listPlants: 100_000,
  mixedAccounts: 1_000,
  mixedPlants: 100,
  findPlants: 100_000,
};

const { values: flags } = parseArgs({
  options: {
    rounds: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    only: { type: 'string' },
    render: { type: 'string' },
  },
});

const log = (line: string) => process.stdout.write(line + '\n');

function setting(flag: string | undefined, env: string, fallback: number): number {
  const value = Number(flag ?? process.env[env] ?? fallback);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${env} (or its flag) must be a number >= 0`);
  return value;
}

function writeReport(results: Results, file: string) {
  const relative = file.startsWith(ROOT) ? file.slice(ROOT.length) : file;
  writeFileSync(join(ROOT, 'bench/results/chart.svg'), renderChart(results));
  writeFileSync(join(ROOT, 'BENCHMARKS.md'), renderMarkdown(results, relative));
}

async function main() {
  const only = (flags.only ?? process.env.BENCH_ONLY)?.split(',').map((s) => s.trim());
  for (const name of only ?? [])
    if (!(name in SCENARIOS)) throw new Error(`no scenario "${name}": ${Object.keys(SCENARIOS)}`);
  const chosen = Object.keys(SCENARIOS).filter((name) => only === undefined || only.includes(name));
  const settings = {
    connections: 64,
    runSec: setting(flags.duration, 'BENCH_DURATION', 5),
    warmupSec: setting(flags.warmup, 'BENCH_WARMUP', WARMUP_SEC),
    rounds: setting(flags.rounds, 'BENCH_ROUNDS', 4),
    generator: chooseGenerator(),
  };
  if (settings.runSec <= 0) throw new Error('BENCH_DURATION (or --duration) must be more than 0');
  pinSelf();
  const scratch = mkdtempSync(join(tmpdir(), 'plant-store-bench-'));
  const startedAt = new Date();
  const loadAtStart = loadAverage();
  let postgres: BenchStore | null = null;
  try {
    log(
      `Plant Store bench: ${chosen.join(', ')}; ${settings.generator}, ${settings.connections} connections, ` +
        `${settings.rounds} rounds of ${settings.runSec} s after ${settings.warmupSec} s of warm-up` +
        (canPin
          ? `; servers on CPU ${SERVER_CPU}, load on CPU ${LOAD_CPU}`
          : '; not pinned (needs taskset and 2 cores)') +
        `; load average ${loadAtStart.toFixed(2)}`,
    );
    if (loadAtStart > 0.5) log('  The machine is busy: every figure below is noisier than on an idle machine.');
    const fsync = fsyncLatency(scratch);
    log(`Disk: fdatasync of 4 KiB takes ${fsync.p50Ms.toFixed(2)} ms (median), ${fsync.p90Ms.toFixed(2)} ms (p90)`);
    log('Seeding the stores...');
    const sizes: Required<Sizes> = { ...SIZES, byIdPlants: byIdPlants(settings) };
    const sqlite = await prepareSqlite(scratch, {
      ...sizes,
      listPlants: chosen.includes('listing') ? sizes.listPlants : 0,
      mixedAccounts: chosen.includes('mixed') ? sizes.mixedAccounts : 0,
      byIdPlants: chosen.includes('by-id') ? sizes.byIdPlants : 0,
      findPlants: chosen.includes('finding') ? sizes.findPlants : 0,
    });
    let postgresError: string | null = null;
    if (chosen.some((name) => name.startsWith('pg-'))) {
      const url = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
      try {
        postgres = await preparePostgres(scratch, url, {
          ...sizes,
          listPlants: 0,
          mixedAccounts: 0,
          byIdPlants: 0,
          findPlants: chosen.includes('pg-finding') ? sizes.findPlants : 0,
        });
      } catch (error) {
        postgresError = `${url}: ${(error as Error).message}`;
        log(`PostgreSQL scenarios skipped: ${postgresError}`);
      }
    }
    const ctx: Context = { settings, sizes, scratch, sqlite, postgres, postgresError, log };
    const scenarios: Record<string, ScenarioResult> = {};
    let listingFigures: ListingFigures | undefined;
    for (const name of chosen) {
      let result: ScenarioResult;
      try {
        result = await SCENARIOS[name]!(ctx);
      } catch (error) {
        // One scenario's failure (a program missing, a server that would not start) costs its
        // figures only, not the whole run's.
        const reason = (error as Error).message.split('\n')[0]!;
        log(`\n${name}: skipped, ${reason}`);
        result = { title: name, about: '', servers: [], skipped: `it failed: ${reason}` };
      }
      if ('listing' in result) listingFigures = result.listing as ListingFigures;
      scenarios[name] = result;
    }
    const results: Results = {
      startedAt: startedAt.toISOString(),
      durationSec: Math.round((Date.now() - startedAt.getTime()) / 1000),
      machine: {
        ...describeMachine(settings.generator),
        fsync,
        loadAverage: { start: loadAtStart, end: loadAverage() },
      },
      settings,
      sizes,
      scenarios,
      ...(listingFigures ? { listing: listingFigures } : {}),
      ...newestInstructionCounts(),
    };
    const resultsDir = join(ROOT, 'bench/results');
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
    log(`\nResults: ${file} (${results.durationSec} s)`);
    if (chosen.length === Object.keys(SCENARIOS).length) {
      writeReport(results, file);
      log('Table: BENCHMARKS.md, chart: bench/results/chart.svg');
    } else {
      log('A partial run: BENCHMARKS.md and the chart were left as they are (`--render` the file to see it there).');
    }
  } finally {
    await postgres?.drop();
    if (process.env.BENCH_KEEP === '1') log(`kept ${scratch}`);
    else rmSync(scratch, { recursive: true, force: true });
  }
}

if (flags.render !== undefined) {
  const file = resolve(flags.render);
  writeReport(JSON.parse(readFileSync(file, 'utf8')) as Results, file);
  log(`BENCHMARKS.md and bench/results/chart.svg rendered from ${file}`);
} else {
  await main();
}
