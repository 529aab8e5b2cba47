/**
 * The load generator: wrk when it is installed (Debian's `wrk` package), else autocannon in a
 * child process. Either way it runs in its own process, pinned to its own core when asked.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/**
 * `done` prints the figures as one JSON line; shared by every script. wrk reports the whole -d
 * duration even when its threads stopped sooner, so a script whose work can run out defines
 * `ranFor(whole)`, the microseconds its threads actually ran.
 */
const WRK_DONE = `
function done(summary, latency, requests)
  local e = summary.errors
  local duration = summary.duration
  if ranFor ~= nil then duration = ranFor(duration) end
  io.write(string.format('WRK_JSON {"requests":%.0f,"durationUs":%.0f,"p50Us":%.0f,"p99Us":%.0f,"failures":%.0f}\\n',
    summary.requests, duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
`;

const WRK_THREAD_INDEX = `
local threads = {}
function setup(thread)
  thread:set("tindex", #threads)
  threads[#threads + 1] = thread
end
`;

/** GET and POST: args token, GET|POST, idBase, and for GET a Prefer header ("" for none). */
const WRK_SIMPLE = `${WRK_THREAD_INDEX}
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  if args[2] == "GET" and args[4] ~= nil and args[4] ~= "" then wrk.headers["Prefer"] = args[4] end
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
${WRK_DONE}`;

/** Batches: args token, idBase, size; each request POSTs that many plants with new ids. */
const WRK_BATCH = `${WRK_THREAD_INDEX}
local size, base, n
function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  wrk.headers["Content-Type"] = "application/json"
  wrk.method = "POST"
  base = tonumber(args[2]) + tindex * 1000000000
  size = tonumber(args[3])
  n = 0
end
function request()
  local items = {}
  for i = 1, size do
    n = n + 1
    items[i] = string.format('{"id":%.0f,"name":"bench plant %.0f","tag":"bench"}', base + n, base + n)
  end
  return wrk.format(nil, "/plants/batch", nil, "[" .. table.concat(items, ",") .. "]")
end
${WRK_DONE}`;

/**
 * Mixed: args tokensFile, idBase, postShare, followShare, limits (comma-separated). A page names
 * its account in each plant's name ("m0042 plant 000001", bench/seed-data.ts), which is how the
 * script knows which token follows its next link, whichever connection answered.
 */
const WRK_MIXED = `${WRK_THREAD_INDEX}
local tokens, limits, waiting = {}, {}, {}
local base, n, postShare, followShare
local maxWaiting = 256
function init(args)
  for line in io.lines(args[1]) do
    if line ~= "" then tokens[#tokens + 1] = line end
  end
  base = tonumber(args[2]) + tindex * 1000000000
  n = 0
  postShare = tonumber(args[3])
  followShare = tonumber(args[4])
  for l in string.gmatch(args[5], "%d+") do limits[#limits + 1] = tonumber(l) end
  math.randomseed(os.time() + tindex * 7919)
end
local function auth(i)
  return { ["Authorization"] = "Bearer " .. tokens[i], ["Content-Type"] = "application/json" }
end
function request()
  local r = math.random()
  if r < postShare then
    n = n + 1
    return wrk.format("POST", "/plants", auth(math.random(#tokens)),
      string.format('{"id":%.0f,"name":"bench plant %.0f","tag":"bench"}', base + n, base + n))
  end
  if #waiting > 0 and math.random() < followShare then
    local item = table.remove(waiting, 1)
    return wrk.format("GET", item[2], auth(item[1]))
  end
  return wrk.format("GET", "/plants?limit=" .. limits[math.random(#limits)], auth(math.random(#tokens)))
end
function response(status, headers, body)
  local link = headers["link"] or headers["Link"]
  if link == nil or #waiting >= maxWaiting then return end
  local path = string.match(link, "<https?://[^/]+(/[^>]*)>")
  local account = string.match(body, '"name":"m(%d+) ')
  if path and account then waiting[#waiting + 1] = { tonumber(account), path } end
end
${WRK_DONE}`;

/**
 * By id: args token, method, firstId, count, stamp, threads. With T threads, thread t takes
 * the ids firstId + t, firstId + t + T, ... GET and PATCH cycle over them. DELETE takes each once
 * and never asks past the last (that would be a 404, a cheaper answer counted as a failure): a
 * thread whose ids are used up stops, noting when on the monotonic clock (LuaJIT's ffi, as wrk
 * has no clock of its own), and `ranFor` gives the run's duration up to the last thread's stop.
 */
const WRK_BY_ID = `${WRK_THREAD_INDEX}
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *now);
]]
local clock = ffi.new("bench_timespec")
local CLOCK_MONOTONIC = 1
local function nowUs()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
  return tonumber(clock.tv_sec) * 1e6 + tonumber(clock.tv_nsec) / 1e3
end
local token, method, first, count, stamp, step, n
function init(args)
  token, method = args[1], args[2]
  first, count, stamp, step = tonumber(args[3]), tonumber(args[4]), tonumber(args[5]), tonumber(args[6])
  n = 0
end
function request()
  local seq = tindex + n * step
  if method == "DELETE" and seq >= count then
    if stoppedUs == nil then
      stoppedUs = nowUs()
      wrk.thread:stop()
    end
    -- Sends nothing: the connection waits for the thread to stop.
    return ""
  end
  if startedUs == nil then startedUs = nowUs() end
  n = n + 1
  local path = string.format("/plants/%.0f", first + seq % count)
  local headers = { ["Authorization"] = "Bearer " .. token }
  if method == "PATCH" then
    headers["Content-Type"] = "application/merge-patch+json"
    return wrk.format("PATCH", path, headers, string.format('{"name":"patched %.0f"}', stamp + seq))
  end
  return wrk.format(method, path, headers)
end
function ranFor(whole)
  local started, stopped
  for _, thread in ipairs(threads) do
    local from, to = thread:get("startedUs"), thread:get("stoppedUs")
    if to == nil then return whole end
    if from ~= nil and (started == nil or from < started) then started = from end
    if stopped == nil or to > stopped then stopped = to end
  end
  if started == nil then return whole end
  return math.min(whole, stopped - started)
end
${WRK_DONE}`;

/** Bad tokens: each request with a token no one has, 43 random base64url characters after \`pst_\`. */
const WRK_BAD_TOKENS = `
local alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
math.randomseed(os.time())
function request()
  local chars = {}
  for i = 1, 43 do
    local r = math.random(1, 64)
    chars[i] = alphabet:sub(r, r)
  end
  return wrk.format("GET", nil, { ["Authorization"] = "Bearer pst_" .. table.concat(chars) })
end
${WRK_DONE}`;

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
