import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import type { RunningServer } from './server.js';

/** The server process as the kernel sees it (Linux /proc). */

/** Resident set size of a process, in KiB (Linux /proc). */
export function rssKiB(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]);
}

/** Sockets of a process (fds pointing at socket:[inode]). */
export function openSockets(pid: number): number {
  let count = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkFd(pid, fd).startsWith('socket:')) count++;
    } catch {
      // closed between readdir and readlink
    }
  }
  return count;
}

function readlinkFd(pid: number, fd: string): string {
  return readlinkSync(`/proc/${pid}/fd/${fd}`);
}

/** The worker processes of a `--workers` server: its primary's children. */
export function workerPids(server: RunningServer): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(server.process.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);
  } catch {
    return [];
  }
}
