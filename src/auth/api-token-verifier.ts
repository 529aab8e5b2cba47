import { performance } from 'node:perf_hooks';
import { tokenLookups } from '../ops/metrics.js';
import type { Storage } from '../storage/types.js';
import type { TokenRecord } from '../storage/types/tokens.js';
import { invalidToken } from './errors.js';
import { hashSecret } from './api-tokens.js';
import type { Verifier } from './bearer.js';
import type { Caller } from './scopes.js';

/**
 * How long a token lookup is trusted, found or not. Revocation and creation must reach every
 * instance within 1 second; half of that keeps the margin while sparing the store all but two
 * lookups per token per second. Measured on the monotonic clock: a wall clock set back must not
 * stretch it.
 */
export const TOKEN_CACHE_MS = 500;
/** Hashes the store had (a valid, revoked or expired token); the cache starts over when full. */
const KNOWN_MAX = 10_000;
/** Hashes the store did not have; the oldest is forgotten first, so a flood of made-up tokens cannot evict known ones. */
const UNKNOWN_MAX = 10_000;

interface Known {
  record: TokenRecord;
  caller: Caller;
  until: number;
}

function check({ record, caller }: Known): Caller {
  if (record.revokedAt !== null) throw invalidToken('token revoked');
  if (record.expiresAt !== null && record.expiresAt.getTime() <= Date.now()) throw invalidToken('token expired');
  return caller;
}

/**
 * Checks API tokens. A token looked up in the last TOKEN_CACHE_MS is answered from memory without a
 * promise; concurrent requests with one token share one lookup. A token this process has found
 * valid is always looked up again when its entry is stale (so revocation reaches it); any other
 * only when `mayLookUp()` allows it.
 */
export function apiTokenVerifier(storage: Storage): Verifier {
  const known = new Map<string, Known>();
  const unknown = new Map<string, number>();
  const inFlight = new Map<string, Promise<Known | null>>();

  function remember(hash: string, record: TokenRecord | null, until: number): Known | null {
    tokenLookups.inc({ found: String(record !== null) });
    if (record === null) {
      unknown.delete(hash);
      if (unknown.size >= UNKNOWN_MAX) unknown.delete(unknown.keys().next().value!);
      unknown.set(hash, until);
      return null;
    }
    if (known.size >= KNOWN_MAX) known.clear();
    const entry: Known = { record, caller: { account: record.account, scopes: new Set(record.scopes) }, until };
    known.set(hash, entry);
    return entry;
  }

  function lookup(hash: string, now: number): Promise<Known | null> {
    let pending = inFlight.get(hash);
    if (pending === undefined) {
      pending = storage
        .findTokenByHash(hash)
        .then((record) => remember(hash, record, now + TOKEN_CACHE_MS))
        .finally(() => inFlight.delete(hash));
      inFlight.set(hash, pending);
    }
    return pending;
  }

  return (secret, mayLookUp) => {
    const now = performance.now();
    const hash = hashSecret(secret);
    const hit = known.get(hash);
    if (hit !== undefined && hit.until > now) return check(hit);
    if ((unknown.get(hash) ?? 0) > now) throw invalidToken('unknown token');
    const wasValid = hit !== undefined && hit.record.revokedAt === null;
    if (!wasValid && !mayLookUp()) throw invalidToken('unknown token');
    return lookup(hash, now).then((entry) => {
      if (entry === null) throw invalidToken('unknown token');
      return check(entry);
    });
  };
}
