/**
 * What the change feed costs creates: durable POST /plants by three services that differ only in
 * the feed: (a) off (`--event-retention 0`: no events written), (b) on (the default), (c) on with
 * 1,000 open streams on the posting account. (c) also measures delivery: every 100 ms the bench
 * creates a probe plant of its own and notes, on each of the 1,000 streams, how long after the
 * 200 its event arrived. Targets: (b)/(a) and (c)/(b) throughput >= 0.90.
 *
 * The three servers run side by side (each measured in its turn), and on PostgreSQL they share one
 * database: so (c) posts to an account of its own, whose streams take no event of (a)'s or (b)'s
 * runs (they once did, and (b) then paid for (c)'s fan-out on the same core: 0.44 of (a)).
 */
import http from 'node:http';
import type { Workload } from '../load.js';
import type { Proc } from '../procs.js';
import { alternate, nextIdBase, type Contender, type Context, type ScenarioResult } from '../rounds.js';
import type { BenchStore } from '../stores.js';
import { contender } from './contenders.js';

const STREAMS = 1_000;
const PROBE_EVERY_MS = 100;

/** 1,000 open streams of `token`'s account and probes through them: delivery latency from each 200 to each stream. */
function followers(url: string, token: string) {
  const acked = new Map<string, number>();
  const latencies: number[] = [];
  const requests: http.ClientRequest[] = [];
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  let probes = 0;
  let timer: NodeJS.Timeout | undefined;
  const probeBase = -nextIdBase();
  return {
    async open() {
      let opened = 0;
      await new Promise<void>((resolve, reject) => {
        for (let i = 0; i < STREAMS; i++) {
          const request = http.get(
            `${url}/events`,
            { agent, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } },
            (response) => {
              if (response.statusCode !== 200) return reject(new Error(`GET /events answered ${response.statusCode}`));
              if (++opened === STREAMS) resolve();
              response.setEncoding('utf8');
              response.on('data', (chunk: string) => {
                const now = performance.now();
                for (const match of chunk.matchAll(/"name":"probe-(\d+)"/g)) {
                  const at = acked.get(match[1]!);
                  if (at !== undefined) latencies.push(now - at);
                }
              });
            },
          );
          request.on('error', () => {});
          requests.push(request);
        }
      });
      timer = setInterval(() => {
        const n = String(probes++);
        void fetch(`${url}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: `{"id":${probeBase - Number(n)},"name":"probe-${n}"}`,
        })
          .then((response) => {
            if (response.status === 200) acked.set(n, performance.now());
          })
          .catch(() => {}); // the server stopping under a probe
      }, PROBE_EVERY_MS);
    },
    close() {
      clearInterval(timer);
      for (const request of requests) request.destroy();
      agent.destroy();
      const sorted = latencies.filter((ms) => ms >= 0).sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
      return { probes, deliveries: sorted.length, deliveryP50Ms: at(0.5), deliveryP99Ms: at(0.99) };
    },
  };
}

async function feedScenario(ctx: Context, store: BenchStore | null, engine: string): Promise<ScenarioResult> {
  const title = `POST /plants with the change feed (${engine})`;
  if (store === null)
    return { title, about: '', servers: [], skipped: `PostgreSQL not reachable: ${ctx.postgresError}` };
  const load = (): Workload => ({ kind: 'post', token: store.tokens.post, idBase: nextIdBase() });
  const followed = store.tokens.followed;
  const followedLoad = (): Workload => ({ kind: 'post', token: followed, idBase: nextIdBase() });
  const streams = ['--event-streams-per-account', String(STREAMS), '--event-streams', String(2 * STREAMS)];
  let watching: ReturnType<typeof followers> | undefined;
  const withStreams: Contender = {
    ...contender(ctx, store, 'service', followedLoad, {
      name: 'feed-streams',
      label: `(c) feed on, ${STREAMS} open streams`,
      server: { args: streams },
      beforeStop: async () => watching?.close() ?? {},
    }),
  };
  const start = withStreams.start;
  withStreams.start = async (): Promise<Proc> => {
    const proc = await start();
    watching = followers(proc.url, followed);
    await watching.open();
    return proc;
  };
  ctx.log(`\n${title}:`);
  const servers = await alternate(ctx, [
    contender(ctx, store, 'service', load, {
      name: 'feed-off',
      label: '(a) feed off (--event-retention 0)',
      server: { args: ['--event-retention', '0'] },
    }),
    contender(ctx, store, 'service', load, { name: 'feed-on', label: '(b) feed on (default)' }),
    withStreams,
  ]);
  return {
    title,
    about:
      'Durable creates by three services that differ only in the change feed: (a) off (`--event-retention 0`, ' +
      'no events written), (b) on, the default (each create also writes its event in the same transaction), ' +
      `(c) on with ${STREAMS} open \`GET /events\` streams on the posting account, which also get a probe create ` +
      `every ${PROBE_EVERY_MS} ms: its figures are the delivery latency from the probe's 200 to its arrival on each ` +
      'stream (whole life of the server). Targets: throughput (b)/(a) >= 0.90 and (c)/(b) >= 0.90.',
    servers,
  };
}

export const feed = (ctx: Context) => feedScenario(ctx, ctx.sqlite, 'SQLite');
export const pgFeed = (ctx: Context) => feedScenario(ctx, ctx.postgres, 'PostgreSQL');
