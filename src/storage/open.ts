import { openPostgres } from './postgres/index.js';
import { openSqlite } from './sqlite/index.js';
import type { Storage } from './types.js';

export interface StorageOptions {
  /** Most PostgreSQL connections this process opens (SQLite has no pool). */
  pgPoolMax?: number;
  /** A direct PostgreSQL URL when `databaseUrl` is a transaction-pooling PgBouncer (postgres/index.ts). */
  databaseDirectUrl?: string;
}

/** The engine is chosen by the URL's scheme; both run their migrations before returning. */
export async function openStorage(databaseUrl: string, options: StorageOptions = {}): Promise<Storage> {
  return databaseUrl.startsWith('sqlite:')
    ? openSqlite(databaseUrl)
    : openPostgres(databaseUrl, options.pgPoolMax, options.databaseDirectUrl);
}
