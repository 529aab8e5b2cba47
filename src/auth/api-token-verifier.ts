import type { Storage, TokenRecord } from '../storage/types.js';
import { invalidToken } from './errors.js';
import { hashSecret } from './api-tokens.js';
import type { Caller } from './scopes.js';

/**
 * How long a token lookup is trusted. Revocation must reach every instance within 1 second;
 * half of that keeps the margin while sparing the store all but two lookups per token per second.
 */
export const TOKEN_CACHE_MS = 500;
const CACHE_MAX_ENTRIES = 10_000;

interface Cached {
  record: TokenRecord | null;
  caller: Caller | null;
  until: number;
}

export function apiTokenVerifier(storage: Storage): (secret: string) => Promise<Caller> {
  const cache = new Map<string, Cached>();

  async function lookup(hash: string, now: number): Promise<Cached> {
    const hit = cache.get(hash);
    if (hit && hit.until > now) return hit;
    const record = await storage.findTokenByHash(hash);
    const entry: Cached = {
      record,
      caller: record && { account: record.account, scopes: new Set(record.scopes) },
      until: now + TOKEN_CACHE_MS,
    };
    if (cache.size >= CACHE_MAX_ENTRIES) cache.clear();
    cache.set(hash, entry);
    return entry;
  }

  return async (secret) => {
    const now = Date.now();
    const { record, caller } = await lookup(hashSecret(secret), now);
    if (!record || !caller) throw invalidToken('unknown token');
    if (record.revokedAt !== null) throw invalidToken('token revoked');
    if (record.expiresAt !== null && record.expiresAt.getTime() <= now) throw invalidToken('token expired');
    return caller;
  };
}
