import { performance } from 'node:perf_hooks';
import { untilAborted } from '../deadline.js';
import { tokenLookups } from '../telemetry/metrics.js';
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

/** What a lookup found, until when it is trusted, and the tokens' version it was read under (null: unknown). */
interface Entry {
  until: number;
  version: string | null;
}

interface Known extends Entry {
  record: TokenRecord;
  caller: Caller;
}

/** A read of the tokens' version (`tokensVersion`): what it said, and when it was asked. */
interface Probe {
  version: string;
  askedAt: number;
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
 *
 * A stale entry is first confirmed by the tokens' version (`tokensVersion`, moved by every change
 * to any token, in the change's commit), read at most once per TOKEN_CACHE_MS for every token the
 * process holds: unchanged since the read before the entry's lookup, no token changed since, and
 * the entry is trusted until TOKEN_CACHE_MS after that version was asked. So with a thousand
 * accounts in use, one read per interval instead of a thousand, and the same bound: a change
 * committed before a read was asked is seen by it.
 */
export function apiTokenVerifier(storage: Storage): Verifier {
  const known = new Map<string, Known>();
  const unknown = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<Known | null>>();
  let probe: Probe | null = null;
  let probing: Promise<Probe | null> | null = null;

  function remember(hash: string, record: TokenRecord | null, entry: Entry): Known | null {
    tokenLookups.inc({ found: String(record !== null) });
    if (record === null) {
      unknown.delete(hash);
      if (unknown.size >= UNKNOWN_MAX) unknown.delete(unknown.keys().next().value!);
      unknown.set(hash, entry);
      return null;
    }
    if (known.size >= KNOWN_MAX) known.clear();
    const found: Known = { record, caller: { account: record.account, scopes: new Set(record.scopes) }, ...entry };
    known.set(hash, found);
    return found;
  }

  function lookup(hash: string, now: number): Promise<Known | null> {
    let pending = inFlight.get(hash);
    if (pending === undefined) {
      // The version of a read asked before this lookup: a change after it moves the version.
      const version = probe?.version ?? null;
      pending = storage
        .findTokenByHash(hash)
        .then((record) => remember(hash, record, { until: now + TOKEN_CACHE_MS, version }))
        .finally(() => inFlight.delete(hash));
      inFlight.set(hash, pending);
    }
    return pending;
  }

  /** The tokens' version as read within the last TOKEN_CACHE_MS: one read shared by every caller; null if it failed. */
  function currentVersion(now: number): Probe | Promise<Probe | null> {
    if (probe !== null && probe.askedAt + TOKEN_CACHE_MS > now) return probe;
    probing ??= storage.tokensVersion().then(
      (version) => {
        probing = null;
        return (probe = { version, askedAt: now });
      },
      () => {
        probing = null;
        return null;
      },
    );
    return probing;
  }

  /** Whether `entry` still holds by `current`: trusted again until the version's read ends its term. */
  function confirmed(entry: Entry, current: Probe | null): boolean {
    if (current === null || entry.version !== current.version) return false;
    entry.until = current.askedAt + TOKEN_CACHE_MS;
    return true;
  }

  function answer(hash: string, now: number): Promise<Caller> {
    return lookup(hash, now).then((entry) => {
      if (entry === null) throw invalidToken('unknown token');
      return check(entry);
    });
  }

  // A stale entry's answer can take two calls one after the other (the tokens' version, then the
  // token): together they wait no longer than the request's deadline.
  return (secret, mayLookUp, deadline) => {
    const now = performance.now();
    const hash = hashSecret(secret);
    const hit = known.get(hash);
    if (hit !== undefined && hit.until > now) return check(hit);
    const miss = unknown.get(hash);
    if (miss !== undefined && miss.until > now) throw invalidToken('unknown token');
    const wasValid = hit !== undefined && hit.record.revokedAt === null;
    if (!wasValid && !mayLookUp()) throw invalidToken('unknown token');
    const stale = hit ?? miss;
    if (stale === undefined || stale.version === null) {
      void currentVersion(now);
      return untilAborted(answer(hash, now), deadline);
    }
    const current = currentVersion(now);
    const settle = (version: Probe | null) => {
      if (!confirmed(stale, version)) return answer(hash, now);
      if (hit === undefined) throw invalidToken('unknown token');
      return check(hit);
    };
    if (!(current instanceof Promise)) {
      const caller = settle(current);
      return caller instanceof Promise ? untilAborted(caller, deadline) : caller;
    }
    return untilAborted(current.then(settle), deadline);
  };
}
