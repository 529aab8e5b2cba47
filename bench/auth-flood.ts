/**
 * The bad-credential flood, side by side in one run: valid clients' GET /plants?limit=10 (32
 * connections) alone, then while one more connection floods made-up API tokens (a new one with each
 * request, so no cache helps), against a server with --auth-failure-limit at its default (60) and
 * one with the limit off. Both run on one address, 127.0.0.1: the valid clients share it with the
 * flood. Server on core 0, load and flood on core 1 (taskset) when there are two cores.
 *
 *   npm run build && node --import tsx bench/auth-flood.ts
 *
 * Knobs: BENCH_DURATION (s per measured run, default 5), BENCH_ROUNDS (3). Needs wrk (the flood
 * is a wrk script); not part of `npm run bench`.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hasCommand, load, pinned, type LoadResult } from './load.js';
import { CLI, startService, type Proc } from './procs.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const [SERVER_CPU, LOAD_CPU] = availableParallelism() >= 2 ? ['0', '1'] : [null, null];

/** Each request with a token no one has: 43 random base64url characters after `pst_`. */
const FLOOD_SCRIPT = `
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
request = function()
  local chars = {}
  for i = 1, 43 do
    local r = math.random(1, 64)
    chars[i] = alphabet:sub(r, r)
  end
  return wrk.format("GET", nil, { ["Authorization"] = "Bearer pst_" .. table.concat(chars) })
end
`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Requests per second of a wrk run of the flood script on one connection. */
function flood(url: string, script: string, seconds: number): Promise<number> {
  const [command, args] = pinned(LOAD_CPU, 'wrk', ['-t1', '-c1', `-d${seconds}s`, '-s', script, url]);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('exit', () => resolve(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN)));
  });
}

async function serverWith(limit: string, scratch: string): Promise<{ proc: Proc; token: string }> {
  const database = `sqlite:${join(scratch, `flood-${limit}.db`)}`;
  const token = execFileSync(process.execPath, [CLI, 'token', 'create', '--account', 'bench', '--database', database], {
    encoding: 'utf8',
  }).trim();
  const proc = await startService(`limit ${limit}`, {
    database,
    logFile: join(scratch, `flood-${limit}.log`),
    cpus: SERVER_CPU,
    env: { AUTH_FAILURE_LIMIT: limit, LOG_LEVEL: 'warn' },
  });
  for (let id = 1; id <= 10; id++) {
    const response = await fetch(`${proc.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: `plant ${id}` }),
    });
    if (response.status !== 200) throw new Error(`seeding answered ${response.status}`);
  }
  return { proc, token };
}

interface Figures {
  alone: LoadResult[];
  flooded: LoadResult[];
  floodRps: number[];
}

async function main() {
  if (!hasCommand('wrk')) throw new Error('this scenario needs wrk (apt-get install wrk)');
  const scratch = mkdtempSync(join(tmpdir(), 'plant-store-flood-'));
  const script = join(scratch, 'flood.lua');
  writeFileSync(script, FLOOD_SCRIPT);
  const results: Record<string, Figures> = {};
  try {
    for (const limit of ['60', '0']) {
      const { proc, token } = await serverWith(limit, scratch);
      const valid = {
        url: `${proc.url}/plants?limit=10`,
        method: 'GET' as const,
        token,
        connections: 32,
        cpus: LOAD_CPU,
      };
      await load('wrk', { ...valid, durationSec: 2 }, scratch); // warm-up
      const figures: Figures = { alone: [], flooded: [], floodRps: [] };
      for (let round = 0; round < ROUNDS; round++) {
        figures.alone.push(await load('wrk', { ...valid, durationSec: DURATION }, scratch));
        const [flooded, floodRps] = await Promise.all([
          load('wrk', { ...valid, durationSec: DURATION }, scratch),
          flood(`${proc.url}/plants?limit=10`, script, DURATION + 1),
        ]);
        figures.flooded.push(flooded);
        figures.floodRps.push(floodRps);
      }
      results[limit] = figures;
      await proc.stop();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }

  console.log(`\n${ROUNDS} rounds of ${DURATION} s, medians; valid clients: 32 connections; flood: 1 connection\n`);
  console.log(
    '| --auth-failure-limit | valid req/s alone | valid req/s flooded | ratio | p99 alone | p99 flooded | flood req/s | valid failures |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [limit, f] of Object.entries(results)) {
    const alone = median(f.alone.map((r) => r.rps));
    const flooded = median(f.flooded.map((r) => r.rps));
    const failures = [...f.alone, ...f.flooded].reduce((sum, r) => sum + r.failures, 0);
    console.log(
      `| ${limit === '0' ? '0 (off)' : limit} | ${alone.toFixed(0)} | ${flooded.toFixed(0)} | ${(flooded / alone).toFixed(2)} | ` +
        `${median(f.alone.map((r) => r.p99Ms)).toFixed(2)} ms | ${median(f.flooded.map((r) => r.p99Ms)).toFixed(2)} ms | ` +
        `${median(f.floodRps).toFixed(0)} | ${failures} |`,
    );
  }
  console.log(`\nAUTH_FLOOD_JSON ${JSON.stringify(results)}`);
}

await main();
