import type { Server } from 'node:http';
import { performance } from 'node:perf_hooks';

/** Event-loop utilisation above which, with requests in flight, the process counts as saturated. */
const SATURATED = 0.8;
/** Utilisation is measured over windows of at least this long. */
const WINDOW_MS = 200;

/**
 * Whether the API needs all of this process's CPU right now: requests are in flight and the
 * event loop was busy more than 80 % of the last window. Deliveries take what the API leaves:
 * all of it between requests or under a moderate load, little at saturation.
 */
export function apiSaturation(server: Server): () => boolean {
  let requests = 0;
  server.on('request', (_request, response) => {
    requests++;
    response.once('close', () => requests--);
  });
  let mark = performance.eventLoopUtilization();
  let markedAt = performance.now();
  let saturated = false;
  return () => {
    if (performance.now() - markedAt >= WINDOW_MS) {
      const now = performance.eventLoopUtilization();
      saturated = performance.eventLoopUtilization(now, mark).utilization > SATURATED;
      mark = now;
      markedAt = performance.now();
    }
    return requests > 0 && saturated;
  };
}
