/** Starting and watching the processes under test, whatever they are (bench/servers.ts knows which). */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pinned } from './load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Proc {
  name: string;
  url: string;
  /** The server process itself (not a wrapper such as strace). */
  pid: number;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Servers still running. Should the bench itself die (an error, Ctrl-C, a closed pipe on its
 * standard output), its exit takes them along instead of leaving them serving.
 */
const running = new Set<number>();
process.on('exit', () => {
  for (const pid of running) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => process.exit(130));

async function waitReady(url: string, child: ChildProcess, logFile: string, withinMs = 60_000) {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`exited (${child.exitCode}) before listening:\n${readFileSync(logFile, 'utf8')}`);
    try {
      const response = await fetch(url);
      await response.arrayBuffer();
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`not listening after ${withinMs / 1000} s:\n${readFileSync(logFile, 'utf8')}`);
}

/** The first child of `pid` (the program a wrapper such as strace runs), from /proc. */
function childOf(pid: number): number {
  const file = `/proc/${pid}/task/${pid}/children`;
  const first = existsSync(file) ? readFileSync(file, 'utf8').trim().split(' ')[0] : '';
  if (!first) throw new Error(`process ${pid} has no child`);
  return Number(first);
}

export interface StartOptions {
  name: string;
  /** The server's command line; `wrap` (say strace and its flags) runs it, `cpus` pins both. */
  command: string[];
  wrap?: string[];
  /** The wrapper becomes the server's process rather than its parent (valgrind does). */
  wrapIsServer?: boolean;
  /** How long the server may take to listen (60 s by default). */
  readyWithinMs?: number;
  cpus: string | null;
  env: Record<string, string>;
  port: number;
  /** A path that answers (any status) once the server listens. */
  probePath: string;
  logFile: string;
}

export async function start(options: StartOptions): Promise<Proc> {
  const log = openSync(options.logFile, 'a');
  const [first, ...rest] = [...(options.wrap ?? []), ...options.command];
  const [command, args] = pinned(options.cpus, first!, rest);
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = `http://127.0.0.1:${options.port}`;
  await waitReady(url + options.probePath, child, options.logFile, options.readyWithinMs);
  const pid = options.wrap && !options.wrapIsServer ? childOf(child.pid!) : child.pid!;
  running.add(child.pid!).add(pid);
  void exited.then(() => running.delete(child.pid!) && running.delete(pid));
  return {
    name: options.name,
    url,
    pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGTERM');
      const forced = setTimeout(() => {
        child.kill('SIGKILL');
        if (pid !== child.pid) process.kill(pid, 'SIGKILL');
      }, 15_000);
      await exited;
      clearTimeout(forced);
    },
  };
}

/** Resident set size and its peak (VmHWM), in bytes, from /proc/PID/status. */
export function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Resets VmHWM to the current RSS (Linux: `echo 5 > /proc/PID/clear_refs`); false when not allowed. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** The CPU time of a process (all its threads) so far, in seconds, from /proc/PID/stat: in its own code, and in the kernel's for it. */
function cpuTimes(pid: number): { user: number; system: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
}

/**
 * The CPU a process (all its threads) spends from now on, per request: call the returned function
 * with the requests served meanwhile. `kernelUs` is the part spent in the kernel for it (system
 * calls, the network stack), the part that differs most between hosts (bench/analysis.md).
 */
export function cpuMeter(pid: number): (requests: number) => { cpuUs: number; kernelUs: number } {
  const before = cpuTimes(pid);
  return (requests) => {
    const after = cpuTimes(pid);
    const perRequest = (seconds: number) => (seconds * 1e6) / requests;
    const kernelUs = perRequest(after.system - before.system);
    return { cpuUs: perRequest(after.user - before.user) + kernelUs, kernelUs };
  };
}

/**
 * The values of the samples named `name` in the Prometheus text of /metrics, summed (every label
 * set); 0 for a labelled family with no sample yet (a counter appears once it is first counted).
 */
export async function metric(url: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const pattern = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm');
  let found = false;
  let sum = 0;
  for (const match of text.matchAll(pattern)) {
    if (labels && !(match[1] ?? '').includes(labels)) continue;
    found = true;
    sum += Number(match[2]);
  }
  if (!found && !text.includes(`# TYPE ${name} `))
    throw new Error(`${name}${labels ? ` with ${labels}` : ''} is not in /metrics`);
  return sum;
}
