import type { Server } from 'node:http';
import { performance } from 'node:perf_hooks';

/** Event-loop utilisation above which, with requests arriving, the process counts as saturated. */
const SATURATED = 0.8;
/** Utilisation and requests are counted over windows of at least this long. */
const WINDOW_MS = 200;

/**
 * Whether the API needs all of this process's CPU right now: requests arrived during the last
 * window and the event loop was busy more than 80 % of it. Deliveries take what the API leaves:
 * all of it between requests or under a moderate load, little at saturation.
 *
 * Requests are counted as they arrive over the window, not as those in flight at the moment of
 * asking: the deliverer asks from a timer, and timers run right after the turn in which a group
 * commit answered every waiting request and before the next requests are read, so at that moment
 * nothing is ever in flight, however saturated the process.
 */
export function apiSaturation(server: Server): () => boolean {
  let arrived = 0;
  server.on('request', () => {
    arrived++;
  });
  let mark = performance.eventLoopUtilization();
  let markedAt = performance.now();
  let busy = false;
  return () => {
    if (performance.now() - markedAt >= WINDOW_MS) {
      const now = performance.eventLoopUtilization();
      busy = arrived > 0 && performance.eventLoopUtilization(now, mark).utilization > SATURATED;
      arrived = 0;
      mark = now;
      markedAt = performance.now();
    }
    return busy;
  };
}
