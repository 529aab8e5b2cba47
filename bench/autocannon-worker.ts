/**
 * The fallback load generator (when wrk is not installed): autocannon's programmatic API in
 * its own process. Argument: a LoadSpec as JSON. Prints one line `AC_JSON <LoadResult>`.
 */
import autocannon from 'autocannon';
import type { LoadResult, LoadSpec } from './load.js';

const spec = JSON.parse(process.argv[2]!) as LoadSpec;
let n = 0;

const result = await autocannon({
  url: spec.url,
  method: spec.method,
  connections: spec.connections,
  duration: spec.durationSec,
  timeout: 5,
  headers: {
    authorization: `Bearer ${spec.token}`,
    ...(spec.method === 'POST' ? { 'content-type': 'application/json' } : {}),
  },
  ...(spec.method === 'POST'
    ? {
        requests: [
          {
            setupRequest: (request: Record<string, unknown>) => {
              const id = (spec.idBase ?? 0) + ++n;
              return { ...request, body: `{"id":${id},"name":"bench plant ${id}","tag":"bench"}` };
            },
          },
        ],
      }
    : {}),
});

const out: LoadResult = {
  requests: result.requests.total,
  durationSec: result.duration,
  rps: result.requests.total / result.duration,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  failures: result.non2xx + result.errors + result.timeouts,
};
process.stdout.write(`AC_JSON ${JSON.stringify(out)}\n`);
