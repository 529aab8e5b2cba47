import type { Storage } from '../types.js';
import { DEFAULT_POOL_MAX, connect, type Sql } from './connection.js';
import { postgresEvents } from './events.js';
import { migrate } from './migrations.js';
import { postgresPlants, type FeedOptions } from './plants.js';
import { postgresTokens } from './tokens.js';
import { postgresWebhooks } from './webhooks.js';

export interface PostgresOptions {
  poolMax?: number | undefined;
  /** Set when `url` is a transaction-pooling PgBouncer: see openPostgres. */
  directUrl?: string | undefined;
  feed?: FeedOptions;
}

async function migrateOver(directUrl: string | undefined, pool: Sql): Promise<void> {
  if (directUrl === undefined) return migrate(pool);
  const direct = connect(directUrl, 1);
  try {
    await migrate(direct);
  } finally {
    await direct.end({ timeout: 5 });
  }
}

/** Group commit's transactions in flight at once (bench/analysis.md has the figures). */
const COMMITS_AT_ONCE = 2;

/**
 * A pooled PostgreSQL store, its schema brought up to date before it is handed out. With a
 * `directUrl`, `url` is a transaction-pooling PgBouncer: migrations run over one direct connection
 * (closed afterwards), and the pool prepares no statements.
 */
export async function openPostgres(
  url: string,
  { poolMax = DEFAULT_POOL_MAX, directUrl, feed = { feed: true, testCommitDelayMs: 0 } }: PostgresOptions = {},
): Promise<Storage> {
  const sql = connect(url, poolMax, { pooled: directUrl !== undefined });
  try {
    await migrateOver(directUrl, sql);
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }

  const events = postgresEvents(sql);
  return {
    engine: 'postgres',
    deliverySource: { engine: 'postgres', url, pooled: directUrl !== undefined },
    // A commit waits on the server's WAL flush and on round trips to a database that may be busy:
    // a second transaction written meanwhile keeps the connection pool and the server working.
    commitsAtOnce: COMMITS_AT_ONCE,
    ...postgresPlants(sql, feed),
    ...events,
    // The feed numbers each account's events in the transaction of its changes (outbox.ts), so the
    // account's last number moves with its plants, whichever instance commits. Without the feed, none.
    ...(feed.feed && { accountVersions: (accounts: string[]) => events.feedHeads(accounts) }),
    ...postgresTokens(sql),
    ...postgresWebhooks(sql),
    async ping() {
      await sql`SELECT 1`;
    },
    async close() {
      // In-flight queries get a few seconds to finish before connections are cut.
      await sql.end({ timeout: 5 });
    },
  };
}
