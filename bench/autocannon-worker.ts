/**
 * The fallback load generator (when wrk is not installed): autocannon's programmatic API in
 * its own process, with the same workloads as the wrk scripts of load.ts. Argument: a LoadSpec
 * as JSON. Prints one line `AC_JSON <LoadResult>`.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import type { LoadResult, LoadSpec } from './load.js';

const spec = JSON.parse(process.argv[2]!) as LoadSpec;
const w = spec.workload;
let n = 0;
const body = (id: number) => `{"id":${id},"name":"bench plant ${id}","tag":"bench"}`;
const json = { 'content-type': 'application/json' };

function requests(): object[] {
  if (w.kind === 'post') {
    return [
      {
        method: 'POST',
        path: '/plants',
        headers: { authorization: `Bearer ${w.token}`, ...json },
        setupRequest: (request: Record<string, unknown>) => ({ ...request, body: body(w.idBase + ++n) }),
      },
    ];
  }
  if (w.kind === 'get') {
    const prefer = w.prefer === undefined ? {} : { prefer: w.prefer };
    return [{ method: 'GET', path: w.path, headers: { authorization: `Bearer ${w.token}`, ...prefer } }];
  }
  if (w.kind === 'batch') {
    const batch = () => `[${Array.from({ length: w.size }, () => body(w.idBase + ++n)).join(',')}]`;
    return [
      {
        method: 'POST',
        path: '/plants/batch',
        headers: { authorization: `Bearer ${w.token}`, ...json },
        setupRequest: (request: Record<string, unknown>) => ({ ...request, body: batch() }),
      },
    ];
  }
  if (w.kind === 'by-id') {
    const { method, firstId, count, stamp } = w;
    const headers = { authorization: `Bearer ${w.token}` };
    const patch = { ...headers, 'content-type': 'application/merge-patch+json' };
    return [
      {
        setupRequest: (request: Record<string, unknown>) => {
          const seq = n++;
          const path = `/plants/${firstId + (seq % count)}`;
          return method === 'PATCH'
            ? { ...request, method, path, headers: patch, body: `{"name":"patched ${stamp + seq}"}` }
            : { ...request, method, path, headers };
        },
      },
    ];
  }
  if (w.kind === 'bad-tokens') {
    const madeUp = () => `pst_${randomBytes(32).toString('base64url').slice(0, 43)}`;
    return [
      {
        setupRequest: (request: Record<string, unknown>) => ({
          ...request,
          method: 'GET',
          path: w.path,
          headers: { authorization: `Bearer ${madeUp()}` },
        }),
      },
    ];
  }
  const tokens = readFileSync(w.tokensFile, 'utf8').split('\n').filter(Boolean);
  const waiting: [token: string, path: string][] = [];
  const pick = <T>(items: T[]) => items[Math.floor(Math.random() * items.length)]!;
  return [
    {
      setupRequest: (request: Record<string, unknown>) => {
        if (Math.random() < w.postShare) {
          const headers = { authorization: `Bearer ${pick(tokens)}`, ...json };
          return { ...request, method: 'POST', path: '/plants', headers, body: body(w.idBase + ++n) };
        }
        const followed = waiting.length > 0 && Math.random() < w.followShare ? waiting.shift() : undefined;
        const [token, path] = followed ?? [pick(tokens), `/plants?limit=${pick(w.limits)}`];
        return { ...request, method: 'GET', path, headers: { authorization: `Bearer ${token}` }, body: undefined };
      },
      onResponse: (_status: number, text: string, _context: unknown, headers: Record<string, string>) => {
        const path = /<(?:https?:\/\/[^/]+)?(\/[^>]*)>/.exec(headers.link ?? '')?.[1];
        const account = /"name":"m(\d+) /.exec(text)?.[1];
        if (path && account && waiting.length < 256) waiting.push([tokens[Number(account) - 1]!, path]);
      },
    },
  ];
}

/** DELETE by id takes each id once: the run ends when they are used up, as wrk's does. */
const idsToUse = w.kind === 'by-id' && w.method === 'DELETE' ? w.count : undefined;
const instance = autocannon({
  url: spec.baseUrl,
  connections: spec.connections,
  duration: spec.durationSec,
  ...(idsToUse === undefined ? {} : { maxOverallRequests: idsToUse }),
  timeout: 5,
  requests: requests(),
});
// autocannon ends a run at its next once-a-second sample, and reports that as its duration.
const startedAt = performance.now();
let lastResponseAt = startedAt;
instance.on('response', () => (lastResponseAt = performance.now()));
const result = await instance;
const durationSec = result.requests.total === idsToUse ? (lastResponseAt - startedAt) / 1000 : result.duration;

const out: LoadResult = {
  requests: result.requests.total,
  durationSec,
  rps: result.requests.total / durationSec,
  p50Ms: result.latency.p50,
  p99Ms: result.latency.p99,
  failures: result.non2xx + result.errors + result.timeouts,
};
process.stdout.write(`AC_JSON ${JSON.stringify(out)}\n`);
