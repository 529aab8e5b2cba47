import type { Server } from 'node:http';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';

/** Share of the event loop, or of the CPU the process may use, above which (with requests arriving) it counts as saturated. */
const SATURATED = 0.8;
/** Utilisation and requests are counted over windows of at least this long. */
const WINDOW_MS = 200;

/**
 * Whether the API needs all of this process's CPU right now: requests arrived during the last
 * window, and either the event loop was busy more than 80 % of it or the process used more than
 * 80 % of the `cores` it may run on, not counting `besideTheApi` (microseconds of CPU used so far by
 * work that is not the API's: the delivery thread). The second test is the one that sees a process
 * whose write transactions run in a thread of their own (sqlite/writer-thread.ts): its event loop
 * waits for commits while the core is full. Deliveries take what the API leaves: all of it between
 * requests or under a moderate load, little at saturation.
 *
 * Requests are counted as they arrive over the window, not as those in flight at the moment of
 * asking: the deliverer asks from a timer, and timers run right after the turn in which a group
 * commit answered every waiting request and before the next requests are read, so at that moment
 * nothing is ever in flight, however saturated the process.
 */
export function apiSaturation(
  server: Server,
  besideTheApi: () => number = () => 0,
  cores = availableParallelism(),
): () => boolean {
  let arrived = 0;
  server.on('request', () => {
    arrived++;
  });
  let loopMark = performance.eventLoopUtilization();
  let cpuMark = process.cpuUsage();
  let besideMark = besideTheApi();
  let markedAt = performance.now();
  let busy = false;
  return () => {
    const elapsedMs = performance.now() - markedAt;
    if (elapsedMs >= WINDOW_MS) {
      const loop = performance.eventLoopUtilization();
      const cpu = process.cpuUsage();
      const beside = besideTheApi();
      const apiCpuMicros = cpu.user - cpuMark.user + cpu.system - cpuMark.system - Math.max(0, beside - besideMark);
      const cpuShare = apiCpuMicros / 1000 / (elapsedMs * cores);
      const loopShare = performance.eventLoopUtilization(loop, loopMark).utilization;
      busy = arrived > 0 && (loopShare > SATURATED || cpuShare > SATURATED);
      arrived = 0;
      loopMark = loop;
      cpuMark = cpu;
      besideMark = beside;
      markedAt = performance.now();
    }
    return busy;
  };
}
