import type { Storage, TokenRecord } from '../storage/types.js';
import { invalidToken } from './errors.js';
import { hashSecret } from './api-tokens.js';
import type { Verifier } from './bearer.js';
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

/** Checks API tokens; a token seen in the last TOKEN_CACHE_MS is answered without a promise or a storage call. */
export function apiTokenVerifier(storage: Storage): Verifier {
  const cache = new Map<string, Cached>();

  async function lookup(hash: string, now: number): Promise<Cached> {
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

  function check({ record, caller }: Cached, now: number): Caller {
    if (!record || !caller) throw invalidToken('unknown token');
    if (record.revokedAt !== null) throw invalidToken('token revoked');
    if (record.expiresAt !== null && record.expiresAt.getTime() <= now) throw invalidToken('token expired');
    return caller;
  }

  return (secret) => {
    const now = Date.now();
    const hash = hashSecret(secret);
    const hit = cache.get(hash);
    if (hit !== undefined && hit.until > now) return check(hit, now);
    return lookup(hash, now).then((entry) => check(entry, now));
  };
}
