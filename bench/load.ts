/**
 * The load generator: wrk when it is installed (Debian's `wrk` package), else autocannon in a
 * child process. Either way it runs in its own process, pinned to its own core when asked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface LoadSpec {
  /** Full URL, path and query included. */
  url: string;
  method: 'GET' | 'POST';
  token: string;
  connections: number;
  durationSec: number;
  /** POST only: ids are idBase + 1, idBase + 2, ... (distinct per thread), so every create is new. */
  idBase?: number;
  /** `taskset -c` list for the load generator, or null to leave it unpinned. */
  cpus: string | null;
  threads?: number;
}

export interface LoadResult {
  requests: number;
  durationSec: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses that were not 2xx, plus socket errors and timeouts: a valid run has 0. */
  failures: number;
}

export type Generator = 'wrk' | 'autocannon';

export function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

export function pinned(cpus: string | null, command: string, args: string[]): [string, string[]] {
  return cpus !== null && hasCommand('taskset') ? ['taskset', ['-c', cpus, command, ...args]] : [command, args];
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} exited ${code}: ${err || out}`)),
    );
  });
}

/** One Lua script for both requests; `done` prints the figures as one JSON line. */
const WRK_SCRIPT = `
local threads = 0
function setup(thread)
  thread:set("tindex", threads)
  threads = threads + 1
end
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  if args[2] == "POST" then
    wrk.method = "POST"
    wrk.headers["Content-Type"] = "application/json"
    local base = tonumber(args[3]) + tindex * 1000000000
    local n = 0
    request = function()
      n = n + 1
      return wrk.format(nil, nil, nil, string.format('{"id":%.0f,"name":"bench plant %.0f","tag":"bench"}', base + n, base + n))
    end
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%.0f,"durationUs":%.0f,"p50Us":%.0f,"p99Us":%.0f,"failures":%.0f}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
`;

let wrkScriptPath: string | null = null;

async function runWrk(spec: LoadSpec, scratchDir: string): Promise<LoadResult> {
  if (wrkScriptPath === null) {
    wrkScriptPath = join(scratchDir, 'bench.lua');
    writeFileSync(wrkScriptPath, WRK_SCRIPT);
  }
  const args = [
    `-t${spec.threads ?? 1}`,
    `-c${spec.connections}`,
    `-d${spec.durationSec}s`,
    '--timeout',
    '5s',
    '-s',
    wrkScriptPath,
    spec.url,
    '--',
    spec.token,
    spec.method,
    String(spec.idBase ?? 0),
  ];
  const output = await run(...pinned(spec.cpus, 'wrk', args));
  const line = /^WRK_JSON (.*)$/m.exec(output);
  if (!line) throw new Error(`wrk printed no result:\n${output}`);
  const r = JSON.parse(line[1]!) as {
    requests: number;
    durationUs: number;
    p50Us: number;
    p99Us: number;
    failures: number;
  };
  const durationSec = r.durationUs / 1e6;
  return {
    requests: r.requests,
    durationSec,
    rps: r.requests / durationSec,
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    failures: r.failures,
  };
}

const AUTOCANNON_WORKER = fileURLToPath(new URL('./autocannon-worker.ts', import.meta.url));

async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const output = await run(
    ...pinned(spec.cpus, process.execPath, ['--import', 'tsx', AUTOCANNON_WORKER, JSON.stringify(spec)]),
  );
  const line = /^AC_JSON (.*)$/m.exec(output);
  if (!line) throw new Error(`autocannon printed no result:\n${output}`);
  return JSON.parse(line[1]!) as LoadResult;
}

export function chooseGenerator(): Generator {
  if (process.env.BENCH_LOAD === 'autocannon') return 'autocannon';
  return hasCommand('wrk') ? 'wrk' : 'autocannon';
}

export function load(generator: Generator, spec: LoadSpec, scratchDir: string): Promise<LoadResult> {
  return generator === 'wrk' ? runWrk(spec, scratchDir) : runAutocannon(spec);
}
