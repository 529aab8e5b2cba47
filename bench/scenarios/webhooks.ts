/**
 * What webhooks cost the API: durable POST /plants on SQLite by three services that differ only in
 * their account's webhook endpoint: (a) none, (b) one subscribed endpoint answering 200 at once,
 * (c) one that never answers. The receivers run in the bench's own process on 127.0.0.1.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Workload } from '../load.js';
import { memory, metric, type Proc } from '../procs.js';
import { alternate, nextIdBase, type Contender, type Context, type ScenarioResult } from '../rounds.js';
import { TARGETS } from '../stats.js';
import { contender } from './contenders.js';

/** How long the services give a receiver: shorter than the default 10 s, so (c) cycles through more attempts. */
const WEBHOOK_TIMEOUT = '2s';
/**
 * Attempts in flight per service: more than the default 16, so that (b)'s backlog of a run (over
 * 100,000 events on a fast machine) goes out in tens of seconds between runs instead of minutes.
 * While the API saturates the service the deliverer takes one batch per second whatever this is.
 */
const WEBHOOK_CONCURRENCY = '64';
/** How long (b)'s backlog may take to send after a run before the bench gives up waiting. */
const DRAIN_LIMIT_MS = 300_000;

/** A receiver on 127.0.0.1 that answers 200 at once, or never (its sockets are cut when it closes). */
async function receiver(answers: boolean) {
  const sockets = new Set<Socket>();
  let requests = 0;
  const server = http.createServer((request, response) => {
    requests++;
    request.resume();
    if (answers) request.on('end', () => response.end());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests: () => requests,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const PENDING = 'plant_store_webhook_pending_events';
const DELIVERIES = 'plant_store_webhook_deliveries_total';

/** Registers `url` for the account of `token` through the API, as a user would. */
async function subscribe(proc: Proc, token: string, url: string) {
  const response = await fetch(`${proc.url}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url }),
  });
  if (response.status !== 201) throw new Error(`POST /webhooks answered ${response.status}: ${await response.text()}`);
}

/**
 * Waits until the endpoint's backlog is sent: the deliveries of one run must not eat into the CPU
 * of the next server's run (all servers share one core). Under full POST load the deliverer
 * falls behind (bounded, the API comes first), so the backlog goes out after each run.
 */
async function drain(proc: Proc) {
  const deadline = Date.now() + DRAIN_LIMIT_MS;
  while ((await metric(proc.url, PENDING)) > 0) {
    if (Date.now() > deadline) throw new Error(`the webhook backlog was not sent within ${DRAIN_LIMIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function webhooks(ctx: Context): Promise<ScenarioResult> {
  const store = ctx.sqlite;
  const token = store.tokens.post;
  const load = (): Workload => ({ kind: 'post', token, idBase: nextIdBase() });
  const answering = await receiver(true);
  const hanging = await receiver(false);
  const server = {
    args: [
      '--webhook-allow-private',
      '--webhook-timeout',
      WEBHOOK_TIMEOUT,
      '--webhook-concurrency',
      WEBHOOK_CONCURRENCY,
    ],
  };
  /** A service whose account has `url` as its one endpoint (subscribed to plant.created, the default). */
  const subscribed = (c: Contender, url: string): Contender => ({
    ...c,
    async start() {
      const proc = await c.start();
      await subscribe(proc, token, url);
      return proc;
    },
  });
  let rssAfterWarmup = NaN;
  ctx.log(`\nPOST /plants with webhook endpoints (SQLite, durable; receivers on 127.0.0.1):`);
  try {
    const servers = await alternate(ctx, [
      contender(ctx, store, 'ceiling', load),
      contender(ctx, store, 'service', load, { name: 'no-webhook', label: '(a) Plant Store, no endpoint', server }),
      subscribed(
        contender(ctx, store, 'service', load, {
          name: 'webhook-answering',
          label: '(b) one endpoint answering 200',
          server,
          settle: drain,
          beforeStop: async (proc) => ({
            delivered: await metric(proc.url, DELIVERIES, 'outcome="delivered"'),
            received: answering.requests(),
          }),
        }),
        answering.url,
      ),
      subscribed(
        contender(ctx, store, 'service', load, {
          name: 'webhook-hanging',
          label: '(c) one endpoint never answering',
          server,
          warmedUp: async (proc) => {
            rssAfterWarmup = memory(proc.pid).rss;
          },
          beforeStop: async (proc) => ({
            pending: await metric(proc.url, PENDING),
            received: hanging.requests(),
            rssAfterWarmup,
            rssAtEnd: memory(proc.pid).rss,
          }),
        }),
        hanging.url,
      ),
    ]);
    return {
      title: 'POST /plants with a webhook endpoint',
      about:
        'Durable creates (as in the POST scenario) by three services that differ only in the webhook endpoint of ' +
        'the account: (a) none, (b) one subscribed to `plant.created` that answers 200 at once, (c) one that ' +
        'never answers. The receivers run in the bench process on 127.0.0.1; the services run with ' +
        `\`--webhook-allow-private --webhook-timeout ${WEBHOOK_TIMEOUT} --webhook-concurrency ${WEBHOOK_CONCURRENCY}\`. ` +
        "Under full load (b)'s deliverer falls " +
        'behind (its concurrency is bounded and requests come first); after each of its runs the bench waits ' +
        "until the backlog is sent, so that it does not eat into the next server's run. Targets, taken round by " +
        `round against (a): throughput (b)/(a) >= ${TARGETS.webhookThroughputRatio.toFixed(2)}, ` +
        `p99 (c)/(a) <= ${TARGETS.webhookHangingP99Ratio.toFixed(1)}.`,
      servers,
    };
  } finally {
    // Receivers first: a hung attempt then ends at once instead of holding its server's shutdown.
    await answering.close();
    await hanging.close();
  }
}
