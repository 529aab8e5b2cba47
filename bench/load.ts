/**
 * The load generator: wrk when it is installed (Debian's `wrk` package), else autocannon in a
 * child process. Either way it runs in its own process, pinned to its own core when asked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WRK_BAD_TOKENS, WRK_BATCH, WRK_BY_ID, WRK_MIXED, WRK_SIMPLE } from './wrk-scripts.js';

/** What the connections ask, over and over. */
export type Workload =
  /** The same GET (path and query) with one token, and a `Prefer` header when given. */
  | { kind: 'get'; path: string; token: string; prefer?: string }
  /** POST /plants/batch of `size` plants, every id new: idBase + 1, idBase + 2, ... (distinct per wrk thread). */
  | { kind: 'batch'; token: string; idBase: number; size: number }
  /** POST /plants, every id new: idBase + 1, idBase + 2, ... (distinct per wrk thread). */
  | { kind: 'post'; token: string; idBase: number }
  /**
   * Many accounts: each request takes a random token of `tokensFile` (one a line); `postShare` of
   * them create a plant, the rest GET /plants?limit=L with L from `limits`, or, `followShare` of
   * the time when one is waiting, the rel="next" link of an earlier page (with that page's token).
   */
  | { kind: 'mixed'; tokensFile: string; idBase: number; postShare: number; followShare: number; limits: number[] }
  /**
   * One plant by id, ids `firstId` .. `firstId + count - 1` (each wrk thread its own share):
   * GET and PATCH cycle over them, PATCH with a new name each time (`patched <stamp + n>`, so
   * each is a real change); DELETE takes each id once and the run ends when they are used up,
   * however fast the server: its rate is then over the time it ran.
   */
  | { kind: 'by-id'; method: 'GET' | 'PATCH' | 'DELETE'; token: string; firstId: number; count: number; stamp: number }
  /** GET `path` with a made-up API token, a new one each request (a flood of bad credentials). */
  | { kind: 'bad-tokens'; path: string };

export interface LoadSpec {
  /** Scheme, host and port of the server. */
  baseUrl: string;
  workload: Workload;
  connections: number;
  durationSec: number;
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

/** Each script's file in the scratch directory, written once. */
const scripts = new Map<string, string>();

function wrkScript(scratchDir: string, name: string, text: string): string {
  let path = scripts.get(name);
  if (path === undefined) {
    path = join(scratchDir, `${name}.lua`);
    writeFileSync(path, text);
    scripts.set(name, path);
  }
  return path;
}

function wrkInvocation(
  w: Workload,
  baseUrl: string,
  threads: number,
  scratchDir: string,
): [script: string, url: string, args: string[]] {
  switch (w.kind) {
    case 'mixed':
      return [
        wrkScript(scratchDir, 'mixed', WRK_MIXED),
        baseUrl + '/plants',
        [w.tokensFile, String(w.idBase), String(w.postShare), String(w.followShare), w.limits.join(',')],
      ];
    case 'by-id':
      return [
        wrkScript(scratchDir, 'by-id', WRK_BY_ID),
        baseUrl + '/plants',
        [w.token, w.method, String(w.firstId), String(w.count), String(w.stamp), String(threads)],
      ];
    case 'bad-tokens':
      return [wrkScript(scratchDir, 'bad-tokens', WRK_BAD_TOKENS), baseUrl + w.path, []];
    case 'get':
      return [wrkScript(scratchDir, 'simple', WRK_SIMPLE), baseUrl + w.path, [w.token, 'GET', '0', w.prefer ?? '']];
    case 'batch':
      return [
        wrkScript(scratchDir, 'batch', WRK_BATCH),
        baseUrl + '/plants/batch',
        [w.token, String(w.idBase), String(w.size)],
      ];
    case 'post':
      return [wrkScript(scratchDir, 'simple', WRK_SIMPLE), baseUrl + '/plants', [w.token, 'POST', String(w.idBase)]];
  }
}

async function runWrk(spec: LoadSpec, scratchDir: string): Promise<LoadResult> {
  const w = spec.workload;
  const [script, url, scriptArgs] = wrkInvocation(w, spec.baseUrl, spec.threads ?? 1, scratchDir);
  const args = [
    `-t${spec.threads ?? 1}`,
    `-c${spec.connections}`,
    `-d${spec.durationSec}s`,
    '--timeout',
    '5s',
    '-s',
    script,
    url,
    '--',
    ...scriptArgs,
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
