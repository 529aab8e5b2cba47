import { readFileSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';

/**
 * The calling thread's id as the kernel knows it (Linux's `/proc/thread-self`), which
 * setpriority and `/proc/self/task/<id>` accept; null where there is no such file.
 */
export function ownThreadId(): number | null {
  try {
    return Number(basename(readlinkSync('/proc/thread-self')));
  } catch {
    return null;
  }
}

/** CPU time a thread of this process has used, in microseconds (its `schedstat`); 0 when the kernel does not say. */
export function threadCpuMicros(threadId: number): number {
  try {
    return Number(readFileSync(`/proc/self/task/${threadId}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0;
  }
}
