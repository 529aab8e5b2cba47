/** The machine the bench runs on: which cores serve and which load, and what it reports about itself. */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, fdatasyncSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { availableParallelism, release } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { hasCommand, type Generator } from './load.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export const cores = availableParallelism();
export const canPin = cores >= 2 && hasCommand('taskset');
/** The server under test runs alone on CPU 0; the load generator and the bench script on CPU 1. */
export const SERVER_CPU = canPin ? '0' : null;
export const LOAD_CPU = canPin ? '1' : null;
export const ALL_CPUS = canPin ? `0-${cores - 1}` : null;

/** Moves this process (the orchestrator) off the server's core; children are pinned explicitly. */
export function pinSelf() {
  if (canPin) spawnSync('taskset', ['-a', '-p', '-c', LOAD_CPU!, String(process.pid)], { stdio: 'ignore' });
}

/** How long this disk takes to make a small write durable: 200 times write 4 KiB + fdatasync. */
export function fsyncLatency(dir: string): { p50Ms: number; p90Ms: number } {
  const path = join(dir, 'fsync-probe');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      writeSync(fd, block);
      const started = performance.now();
      fdatasyncSync(fd);
      times.push(performance.now() - started);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  times.sort((a, b) => a - b);
  return { p50Ms: times[100]!, p90Ms: times[180]! };
}

/** The 1-minute load average when the bench starts: other work on the machine makes rounds noisy. */
export function loadAverage(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}

export function describeMachine(generator: Generator) {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? 'unknown';
  const version =
    generator === 'wrk'
      ? (spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.split(' Copyright')[0]?.trim() ??
        'wrk')
      : `autocannon ${(JSON.parse(readFileSync(join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')) as { version: string }).version}`;
  return {
    nproc: cores,
    cpuModel: model,
    node: process.version,
    kernel: release(),
    loadGenerator: version,
    pinned: canPin,
    commit: codeCommit(),
  };
}

/** The commit of the code under test, marked when the service's or the bench's code has uncommitted changes. */
export function codeCommit(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short', 'HEAD');
    // The code under test: the service and the bench's own programs, not its outputs.
    const code = ['src', 'bench/*.ts', 'bench/peers', 'bench/scenarios'];
    return git('status', '--porcelain', '--untracked-files=no', '--', ...code) === ''
      ? commit
      : `${commit} + uncommitted changes`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
