import type { Storage } from '../types.js';
import { DEFAULT_POOL_MAX, connect } from './connection.js';
import { postgresEvents } from './events.js';
import { migrate } from './migrations.js';
import { postgresPlants, type FeedOptions } from './plants.js';
import { postgresTokens } from './tokens.js';
import { postgresWebhooks } from './webhooks.js';

/** A pooled PostgreSQL store, its schema brought up to date before it is handed out. */
export async function openPostgres(
  url: string,
  poolMax = DEFAULT_POOL_MAX,
  feed: FeedOptions = { feed: true, testCommitDelayMs: 0 },
): Promise<Storage> {
  const sql = connect(url, poolMax);
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }

  return {
    engine: 'postgres',
    ...postgresPlants(sql, feed),
    ...postgresEvents(sql),
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
