import type { Storage } from './types.js';

export async function openPostgres(_url: string): Promise<Storage> {
  throw new Error('PostgreSQL storage is not built yet');
}
