import { openPostgres } from './postgres.js';
import { openSqlite } from './sqlite.js';
import type { Storage } from './types.js';

/** The engine is chosen by the URL's scheme; both run their migrations before returning. */
export async function openStorage(databaseUrl: string): Promise<Storage> {
  return databaseUrl.startsWith('sqlite:') ? openSqlite(databaseUrl) : openPostgres(databaseUrl);
}
