import type { Storage } from '../types.js';
import { DEFAULT_POOL_MAX, connect, type Sql } from './connection.js';
import { migrate } from './migrations.js';
import { postgresPlants } from './plants.js';
import { postgresTokens } from './tokens.js';
import { postgresWebhooks } from './webhooks.js';

async function migrateOver(directUrl: string | undefined, pool: Sql): Promise<void> {
  if (directUrl === undefined) return migrate(pool);
  const direct = connect(directUrl, 1);
  try {
    await migrate(direct);
  } finally {
    await direct.end({ timeout: 5 });
  }
}

/**
 * A pooled PostgreSQL store, its schema brought up to date before it is handed out. With a
 * `directUrl`, `url` is a transaction-pooling PgBouncer: migrations run over one direct connection
 * (closed afterwards), and the pool prepares no statements.
 */
export async function openPostgres(url: string, poolMax = DEFAULT_POOL_MAX, directUrl?: string): Promise<Storage> {
  const sql = connect(url, poolMax, { pooled: directUrl !== undefined });
  try {
    await migrateOver(directUrl, sql);
  } catch (error) {
    await sql.end({ timeout: 0 });
    throw error;
  }

  return {
    engine: 'postgres',
    ...postgresPlants(sql),
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
