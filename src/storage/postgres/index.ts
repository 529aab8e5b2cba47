import { lateReport } from '../late-report.js';
import type { Storage } from '../types.js';
import { isStorageUnavailable } from '../unavailable.js';
import { callBounds, Reachability } from './bounded.js';
import { DEFAULT_POOL_MAX, assertParses, connect, untilPrepared, withCreateHint } from './connection.js';
import { postgresEvents } from './events.js';
import { migrate } from './migrations.js';
import { applyChanges } from './plant-writes.js';
import { postgresPlants } from './plants.js';
import { postgresOutbox } from './outbox.js';
import { postgresTokens } from './tokens.js';
import { postgresDeliveries } from './webhook-deliveries.js';
import { postgresEndpoints } from './webhook-endpoints.js';

export interface PostgresOptions {
  poolMax?: number | undefined;
  /** Set when `url` is a transaction-pooling PgBouncer: see openPostgres. */
  directUrl?: string | undefined;
  feed?: {
    /** False (`--event-retention 0`): no change-feed events are written. */
    feed: boolean;
  };
  /** `--database-timeout`: the longest any call waits for the database (bounded.ts). */
  timeoutMs?: number;
  /**
   * The server: a database that does not answer at the first try is waited for (untilReady).
   * Otherwise (the CLI) the first failure is thrown, as any error.
   */
  wait?: boolean;
}

/** The CLI's bound: the token commands and copy wait as long as the driver does. */
const CLI_TIMEOUT_MS = 30_000;

/**
 * Migrations run over a connection of their own (direct when the pool goes through PgBouncer),
 * whose answers are not timed: building an index on a large table may take minutes.
 */
async function migrateOver(url: string, timeoutMs: number): Promise<void> {
  const own = connect(url, 1, { timeoutMs, watchAnswers: false });
  try {
    await migrate(own);
  } finally {
    await own.end({ timeout: 5 });
  }
}

/** Group commit's transactions in flight at once (bench/analysis.md has the figures). */
const COMMITS_AT_ONCE = 2;

/**
 * A pooled PostgreSQL store, its schema brought up to date before it serves. With a `directUrl`,
 * `url` is a transaction-pooling PgBouncer: migrations run over one direct connection (closed
 * afterwards), and the pool prepares no statements.
 *
 * Every call is bounded by `timeoutMs` (bounded.ts). With `wait`, a database that cannot be
 * reached at the first try is not an error: the store is handed out at once, answers 503 until
 * the database answers and the migrations have run, and tries again with backoff meanwhile
 * (`untilReady`, each failure one warn line). An error that no retry can mend (a refused password,
 * a database that does not exist, a URL that cannot be parsed) is thrown: the caller exits.
 */
export async function openPostgres(
  url: string,
  {
    poolMax = DEFAULT_POOL_MAX,
    directUrl,
    feed = { feed: true },
    timeoutMs = CLI_TIMEOUT_MS,
    wait = false,
  }: PostgresOptions = {},
): Promise<Storage> {
  for (const each of [url, directUrl]) if (each !== undefined) assertParses(each);
  const report = lateReport();
  const reachability = new Reachability(report);
  const sql = connect(url, poolMax, {
    pooled: directUrl !== undefined,
    timeoutMs,
    onExpired: () => report.dependencyFailed('postgres'),
  });

  // The feed key is read here, by the pool's first query, and not at the first request: postgres.js
  // writes the first query of a fresh pool before the array types it reads are known, so a first
  // query with an array parameter fails ("malformed array literal"; a token created by the CLI).
  const prepare = async () => {
    await migrateOver(directUrl ?? url, timeoutMs).catch((error: unknown) => {
      throw withCreateHint(error, directUrl ?? url);
    });
    feedKey = await events.feedKey();
  };
  const events = postgresEvents(sql);
  let feedKey: Buffer | null = null;
  let pending: Promise<void> | null = null;
  try {
    await prepare();
  } catch (error) {
    if (!wait || !isStorageUnavailable(error)) {
      await sql.end({ timeout: 0 });
      throw error;
    }
    reachability.failedAtStart();
    pending = untilPrepared(prepare, error, report).then(() => {
      pending = null;
      reachability.answered();
    });
    // The caller learns of a permanent error through untilReady; nothing else may be left unhandled.
    pending.catch(() => sql.end({ timeout: 0 }));
  }

  const { within, pages } = callBounds({ timeoutMs, ready: () => pending === null, reachability });
  const plants = postgresPlants(sql);
  const tokens = postgresTokens(sql);
  const endpoints = postgresEndpoints(sql);
  const deliveries = postgresDeliveries(sql);
  const outbox = postgresOutbox(sql);
  // Each method is its concern's SQL (plant-writes.ts, plants.ts, events.ts, tokens.ts, webhook-*.ts),
  // bounded (bounded.ts).
  return {
    engine: 'postgres',
    deliverySource: { engine: 'postgres', url, pooled: directUrl !== undefined, timeoutMs },
    timeoutMs,
    // A commit waits on the server's WAL flush and on round trips to a database that may be busy:
    // a second transaction written meanwhile keeps the connection pool and the server working.
    commitsAtOnce: COMMITS_AT_ONCE,

    applyChanges: (changes) => within(() => applyChanges(sql, changes, feed.feed)),
    getPlant: (account, id) => within(() => plants.getPlant(account, id)),
    listPlants: (account, listing, limit) => within(() => plants.listPlants(account, listing, limit)),
    countPlants: (account, filter) => within(() => plants.countPlants(account, filter)),
    streamPlants: (account, listing) => pages(plants.streamPlants(account, listing)),
    plantsVersion: () => plants.plantsVersion(),
    // The feed numbers each account's events in the transaction of its changes (outbox.ts), so the
    // account's last number moves with its plants, whichever instance commits. Without the feed, none.
    ...(feed.feed && { accountVersions: (accounts: string[]) => within(() => events.feedHeads(accounts)) }),

    // The key never changes: read once, at start (above).
    feedKey: () => within(async () => feedKey!),
    feedHead: (account) => within(() => events.feedHead(account)),
    feedHeads: (accounts) => within(() => events.feedHeads(accounts)),
    feedEvents: (account, afterSeq, limit) => within(() => events.feedEvents(account, afterSeq, limit)),
    pruneEvents: (before) => within(() => events.pruneEvents(before)),

    createToken: (token) => within(() => tokens.createToken(token)),
    findTokenByHash: (secretHash) => within(() => tokens.findTokenByHash(secretHash)),
    listTokens: (account) => within(() => tokens.listTokens(account)),
    revokeToken: (id, at) => within(() => tokens.revokeToken(id, at)),
    createFirstToken: (token) => within(() => tokens.createFirstToken(token)),
    tokensVersion: () => within(() => tokens.tokensVersion()),

    createEndpoint: (endpoint, maxPerAccount) => within(() => endpoints.createEndpoint(endpoint, maxPerAccount)),
    listEndpoints: (account) => within(() => endpoints.listEndpoints(account)),
    getEndpoint: (account, id) => within(() => endpoints.getEndpoint(account, id)),
    updateEndpoint: (account, id, changes, reason) =>
      within(() => endpoints.updateEndpoint(account, id, changes, reason)),
    deleteEndpoint: (account, id) => within(() => endpoints.deleteEndpoint(account, id)),
    rotateSecret: (account, id, secret, previousUntil) =>
      within(() => endpoints.rotateSecret(account, id, secret, previousUntil)),
    listDeliveries: (account, endpointId, limit) => within(() => endpoints.listDeliveries(account, endpointId, limit)),
    requeueFailed: (account, endpointId, since, until, now) =>
      within(() => endpoints.requeueFailed(account, endpointId, since, until, now)),
    claimDeliveries: (owner, now, leaseUntil, limit, share) =>
      within(() => deliveries.claimDeliveries(owner, now, leaseUntil, limit, share)),
    recordAttempts: (owner, results) => within(() => deliveries.recordAttempts(owner, results)),
    disableEndpoint: (account, endpointId, reason) =>
      within(() => deliveries.disableEndpoint(account, endpointId, reason)),
    pruneDeliveries: (before) => within(() => deliveries.pruneDeliveries(before)),
    deliveryBacklog: () => within(() => deliveries.deliveryBacklog()),

    ping: () =>
      within(async () => {
        await sql`SELECT 1`;
      }),
    async close() {
      // A release before the packed outbox (1.2.0), rolled back to, looks for pending events in
      // webhook_deliveries only: whatever this process leaves packed goes there as it stops. Not
      // while the database is known to be out of reach: a stop then waits for no one.
      if (reachability.unreachableSeconds() === 0) await within(() => outbox.unpackAll()).catch(() => {});
      // In-flight queries get a few seconds to finish before connections are cut.
      await sql.end({ timeout: 5 });
    },
    reportTo: (to) => report.reportTo(to),
    unreachableSeconds: () => reachability.unreachableSeconds(),
    untilReady: () => pending,
  };
}
