/**
 * How fast the deliverer sends, on either engine, beside the service's create rate measured in the
 * same run: (1) and (4) a backlog of 100,000 events to one endpoint answering at once, (2) creates
 * at half the measured rate with one endpoint, (3) 100 accounts with one endpoint each. Receivers
 * and the paced load run in the bench's process; the service runs with its default webhook settings.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import { issueToken } from '../../src/auth/api-tokens.js';
import { openStorage } from '../../src/storage/open.js';
import { load } from '../load.js';
import { LOAD_CPU } from '../machine.js';
import { metric, type Proc } from '../procs.js';
import { nextIdBase, type Context, type Run, type ScenarioResult } from '../rounds.js';
import type { BenchStore } from '../stores.js';
import { contender } from './contenders.js';

const BACKLOG_EVENTS = 100_000;
const BATCH = 1_000;
const ACCOUNTS = 100;
const HALF_LOAD_SEC = 15;
/** How long a backlog may take to go out before the bench stops waiting (and reports it unsent). */
const DRAIN_LIMIT_MS = 150_000;
const DELIVERED = ['plant_store_webhook_deliveries_total', 'outcome="delivered"'] as const;
const PENDING = 'plant_store_webhook_pending_events';
const OLDEST = 'plant_store_webhook_oldest_pending_age_seconds';

/** A receiver on 127.0.0.1 that answers 200 at once, keeping its connections alive. */
async function receiver() {
  const sockets = new Set<Socket>();
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.end());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** One API call from the bench; throws unless it answers `expect`. */
function call(proc: Proc, method: string, path: string, token: string, body: string | null, expect: number) {
  return new Promise<string>((resolve, reject) => {
    const request = http.request(`${proc.url}${path}`, {
      method,
      agent,
      headers: { authorization: `Bearer ${token}`, ...(body !== null && { 'content-type': 'application/json' }) },
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () =>
        response.statusCode === expect
          ? resolve(text)
          : reject(new Error(`${method} ${path} answered ${response.statusCode}: ${text.slice(0, 200)}`)),
      );
    });
    request.end(body ?? undefined);
  });
}

async function subscribe(proc: Proc, token: string, url: string): Promise<string> {
  return (JSON.parse(await call(proc, 'POST', '/webhooks', token, JSON.stringify({ url }), 201)) as { id: string }).id;
}

/** Writes `count` creates of the account as batches of BATCH. */
async function writeBatches(proc: Proc, token: string, count: number) {
  const base = nextIdBase();
  for (let first = 0; first < count; first += BATCH) {
    const plants = Array.from({ length: Math.min(BATCH, count - first) }, (_, i) => ({
      id: base + first + i + 1,
      name: `queued ${first + i}`,
    }));
    const body = JSON.stringify(plants);
    // A 503 says "retry shortly" (a busy database): as a client would, a few times.
    for (let attempt = 1; ; attempt++) {
      try {
        await call(proc, 'POST', '/plants/batch', token, body, 200);
        break;
      } catch (error) {
        if (attempt === 5 || !(error as Error).message.includes('answered 503')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }
}

/** Waits until `target` deliveries are counted; when they were, or null if not within DRAIN_LIMIT_MS. */
async function deliveredBy(proc: Proc, target: number): Promise<number | null> {
  const deadline = Date.now() + DRAIN_LIMIT_MS;
  while (Date.now() < deadline) {
    if ((await metric(proc.url, ...DELIVERED)) >= target) return Date.now();
    // Not more often: each scrape counts the pending events.
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return null;
}

const s1 = (ms: number) => (ms / 1000).toFixed(1);
const n0 = (n: number) => Math.round(n).toLocaleString('en-US');

/** A backlog written by `writers` (token each) as fast as batches go, and the time it takes to go out. */
async function backlog(proc: Proc, tokens: string[], perAccount: number, label: string): Promise<string> {
  const before = await metric(proc.url, ...DELIVERED);
  const total = tokens.length * perAccount;
  const startedAt = Date.now();
  await Promise.all(tokens.map((token) => writeBatches(proc, token, perAccount)));
  const writtenAt = Date.now();
  const deliveredAtWritten = (await metric(proc.url, ...DELIVERED)) - before;
  const doneAt = await deliveredBy(proc, before + total);
  if (doneAt === null) {
    const sent = (await metric(proc.url, ...DELIVERED)) - before;
    return `${label}: ${n0(sent)} of ${n0(total)} delivered ${s1(DRAIN_LIMIT_MS)} s after the writes began (not all sent)`;
  }
  const afterWrites = (total - deliveredAtWritten) / ((doneAt - writtenAt) / 1000);
  return (
    `${label}: ${n0(total)} events written in ${s1(writtenAt - startedAt)} s, all delivered ` +
    `${s1(doneAt - startedAt)} s after the first write: **${n0(total / ((doneAt - startedAt) / 1000))} deliveries/s** ` +
    `over the whole, ${n0(afterWrites)}/s once the writes were done`
  );
}

/**
 * Creates at `rate` a second for HALF_LOAD_SEC from `connections` paced loops; the oldest pending
 * age, sampled every 250 ms, at its highest, and how long after the load every event was delivered.
 */
async function paced(proc: Proc, token: string, rate: number, label: string): Promise<string> {
  const connections = 32;
  const base = nextIdBase();
  const endAt = Date.now() + HALF_LOAD_SEC * 1000;
  let sent = 0;
  let failed = 0;
  let oldest = 0;
  const sampler = setInterval(() => {
    void metric(proc.url, OLDEST).then(
      (age) => (oldest = Math.max(oldest, age)),
      () => {},
    );
  }, 250);
  const before = await metric(proc.url, ...DELIVERED);
  const startedAt = Date.now();
  await Promise.all(
    Array.from({ length: connections }, async (_, loop) => {
      for (let n = 0; ; n++) {
        const due = startedAt + ((n * connections + loop) / rate) * 1000;
        if (due >= endAt) return;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const id = base + n * connections + loop + 1;
        await call(proc, 'POST', '/plants', token, JSON.stringify({ id, name: `paced ${id}` }), 200).then(
          () => sent++,
          () => failed++,
        );
      }
    }),
  );
  const loadEndedAt = Date.now();
  const doneAt = await deliveredBy(proc, before + sent);
  clearInterval(sampler);
  const achieved = sent / ((loadEndedAt - startedAt) / 1000);
  const after = doneAt === null ? `not all delivered within ${s1(DRAIN_LIMIT_MS)} s` : `${s1(doneAt - loadEndedAt)} s`;
  return (
    `${label}: ${n0(sent)} creates at ${n0(achieved)}/s for ${HALF_LOAD_SEC} s (${failed} failed); ` +
    `oldest pending event at most **${oldest.toFixed(1)} s** old; every delivery made **${after}** after the load ended`
  );
}

/** Tokens of ACCOUNTS accounts of their own, written into the service's store before it starts. */
async function accountTokens(databaseUrl: string): Promise<string[]> {
  const storage = await openStorage(databaseUrl, { pgPoolMax: 2 });
  try {
    const tokens: string[] = [];
    for (let a = 0; a < ACCOUNTS; a++) tokens.push((await issueToken(storage, `webhook-account-${a}`)).secret);
    return tokens;
  } finally {
    await storage.close();
  }
}

async function webhookDelivery(ctx: Context, store: BenchStore | null, engineLabel: string): Promise<ScenarioResult> {
  const title = `Webhook deliveries (${engineLabel})`;
  if (store === null) return { title, about: '', servers: [], skipped: ctx.postgresError ?? 'no PostgreSQL' };
  const name = `webhook-delivery-${store.engine}`;
  const accounts = await accountTokens(store.databaseFor(name));
  const answering = await receiver();
  const service = contender(ctx, store, 'service', () => ({ kind: 'post', token: store.tokens.post, idBase: 0 }), {
    name,
    server: { args: ['--webhook-allow-private'] },
  });
  const proc = await service.start();
  const notes: string[] = [];
  const endpoints: Array<[token: string, id: string]> = [];
  let createRate: Run | null = null;
  try {
    // The create rate of this service, no endpoint: the one the half load is taken from.
    const token = store.tokens.post;
    createRate = {
      ...(await load(
        ctx.settings.generator,
        {
          baseUrl: proc.url,
          workload: { kind: 'post', token, idBase: nextIdBase() },
          connections: ctx.settings.connections,
          durationSec: ctx.settings.runSec,
          cpus: LOAD_CPU,
        },
        ctx.scratch,
      )),
      cpuUsPerRequest: null,
    };
    endpoints.push([token, await subscribe(proc, token, answering.url)]);
    ctx.log(`  ${engineLabel}: ${n0(createRate.rps)} creates/s without an endpoint`);
    // BENCH_PACED_RATE fixes (2)'s rate instead, to compare two builds at the same load.
    const pacedRate = Number(process.env.BENCH_PACED_RATE ?? createRate.rps / 2);
    const pacedLabel = process.env.BENCH_PACED_RATE
      ? `(2) creates at ${n0(pacedRate)}/s`
      : '(2) creates at half that rate';
    notes.push(await paced(proc, token, pacedRate, `${pacedLabel}, one endpoint`));
    ctx.log(`  ${notes.at(-1)}`);
    notes.push(await backlog(proc, [token], BACKLOG_EVENTS, '(1, 4) a backlog to one endpoint answering at once'));
    ctx.log(`  ${notes.at(-1)}`);
    for (const [owner, id] of endpoints.splice(0)) await call(proc, 'DELETE', `/webhooks/${id}`, owner, null, 204);
    for (const account of accounts) endpoints.push([account, await subscribe(proc, account, answering.url)]);
    notes.push(
      await backlog(proc, accounts, BACKLOG_EVENTS / ACCOUNTS, `(3) ${ACCOUNTS} accounts with one endpoint each`),
    );
    ctx.log(`  ${notes.at(-1)}`);
    notes.push(`pending events at the end: ${await metric(proc.url, PENDING)}`);
  } finally {
    // The endpoints go (on PostgreSQL the store is shared with later scenarios), then the service.
    for (const [token, id] of endpoints)
      await call(proc, 'DELETE', `/webhooks/${id}`, token, null, 204).catch(() => {});
    await answering.close();
    await proc.stop();
  }
  return {
    title,
    about:
      `One service (default webhook settings, \`--webhook-allow-private\`) on ${engineLabel}; receivers answering ` +
      '200 at once in the bench process on 127.0.0.1. Its create rate (POST /plants, no endpoint) is measured first ' +
      `(the row below); then (2) creates at half that rate for ${HALF_LOAD_SEC} s from 32 paced connections with one ` +
      `endpoint subscribed; (1, 4) ${n0(BACKLOG_EVENTS)} events written as batches of ${n0(BATCH)} to one endpoint; ` +
      `(3) the same number over ${ACCOUNTS} accounts with one endpoint each. Targets: (1) >= 2,000 deliveries/s, ` +
      '(2) oldest pending < 2 s and every delivery within 5 s of the end, (3) >= 2,000/s, (4) drained within 60 s.',
    servers: createRate === null ? [] : [{ name, label: 'Plant Store, POST /plants, no endpoint', runs: [createRate] }],
    notes,
  };
}

export const webhookDeliverySqlite = (ctx: Context) => webhookDelivery(ctx, ctx.sqlite, 'SQLite');
export const webhookDeliveryPostgres = (ctx: Context) => webhookDelivery(ctx, ctx.postgres, 'PostgreSQL');
