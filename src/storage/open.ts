import { openPostgres } from './postgres/index.js';
import { openSqlite } from './sqlite/index.js';
import type { Storage } from './types.js';

export interface StorageOptions {
  /** Most PostgreSQL connections this process opens (SQLite has no pool). */
  pgPoolMax?: number;
  /** A direct PostgreSQL URL when `databaseUrl` is a transaction-pooling PgBouncer (postgres/index.ts). */
  databaseDirectUrl?: string;
  /** `--database-timeout` (PostgreSQL): the longest any call waits for the database. */
  databaseTimeoutMs?: number;
  /** The server: a database that does not answer at start is waited for (postgres/index.ts). */
  waitForDatabase?: boolean;
  /** Whether the change feed's events are written (`--event-retention` above 0); default yes. */
  feed?: boolean;
  /** Where SQLite's write transactions run (`--sqlite-writer`, sqlite/index.ts); default `thread`. */
  sqliteWriter?: 'thread' | 'inline';
}

/** The engine is chosen by the URL's scheme; both run their migrations before returning. */
export async function openStorage(databaseUrl: string, options: StorageOptions = {}): Promise<Storage> {
  const feed = options.feed ?? true;
  if (databaseUrl.startsWith('sqlite:')) {
    return openSqlite(databaseUrl, { feed, writer: options.sqliteWriter ?? 'thread' });
  }
  return openPostgres(databaseUrl, {
    poolMax: options.pgPoolMax,
    directUrl: options.databaseDirectUrl,
    feed: { feed },
    ...(options.databaseTimeoutMs !== undefined && { timeoutMs: options.databaseTimeoutMs }),
    wait: options.waitForDatabase ?? false,
  });
}
