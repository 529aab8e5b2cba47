/** Starting and watching the processes under test: the real service and the ceiling. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pinned } from './load.js';

export const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const CEILING = fileURLToPath(new URL('./ceiling.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Proc {
  name: string;
  url: string;
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

async function waitReady(url: string, child: ChildProcess, logFile: string) {
  const deadline = Date.now() + 30_000;
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
  throw new Error(`not listening after 30 s:\n${readFileSync(logFile, 'utf8')}`);
}

async function start(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  probePath: string,
  logFile: string,
  port: number,
): Promise<Proc> {
  const log = openSync(logFile, 'a');
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', log, log] });
  closeSync(log);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url + probePath, child, logFile);
  return {
    name,
    url,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const forced = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(forced);
    },
  };
}

export interface ServiceOptions {
  database: string;
  logFile: string;
  cpus: string | null;
  workers?: number;
  env?: Record<string, string>;
}

/** `node dist/cli.js serve` with the rate limit off and its log lines going to `logFile`. */
export async function startService(name: string, options: ServiceOptions): Promise<Proc> {
  const port = await freePort();
  const args = [
    CLI,
    'serve',
    '--port',
    String(port),
    '--database',
    options.database,
    '--workers',
    String(options.workers ?? 1),
  ];
  const [command, argv] = pinned(options.cpus, process.execPath, args);
  return start(name, command, argv, { RATE_LIMIT: '0', ...options.env }, '/healthz', options.logFile, port);
}

export async function startCeiling(
  tokens: Record<string, string>,
  plants: Record<string, number>,
  logFile: string,
  cpus: string | null,
): Promise<Proc> {
  const port = await freePort();
  const [command, argv] = pinned(cpus, process.execPath, ['--import', 'tsx', CEILING]);
  const env = { PORT: String(port), CEILING_TOKENS: JSON.stringify(tokens), CEILING_PLANTS: JSON.stringify(plants) };
  return start('ceiling', command, argv, env, '/', logFile, port);
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

/** User + system CPU time of a process (all its threads) so far, in seconds, from /proc/PID/stat. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The value of one unlabelled counter in the Prometheus text of /metrics. */
export async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const match = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!match) throw new Error(`${name} is not in /metrics`);
  return Number(match[1]);
}
