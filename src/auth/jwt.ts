import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type KeyObject,
} from 'jose';
import { ConfigError, type Config } from '../config.js';
import { HttpError } from '../errors.js';
import type { Verifier } from './bearer.js';
import { invalidToken } from './errors.js';
import type { Caller } from './scopes.js';

/** Asymmetric algorithms only: never `none`, never HMAC (a public key must not double as a secret). */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
];
export const CLOCK_TOLERANCE_SECONDS = 30;
/** Unknown key ids cause at most one JWKS refetch per second; a failed fetch is not retried for as long. */
const UNKNOWN_KID_COOLDOWN_MS = 1_000;
const JWKS_CACHE_MS = 10 * 60_000;
const JWKS_TIMEOUT_MS = 3_000;

function identityProviderDown(): HttpError {
  return new HttpError(503, 'the identity provider cannot be reached to verify this token; retry shortly', {
    'retry-after': '5',
  });
}

function hasKey(set: JSONWebKeySet | undefined, kid: string | undefined): boolean {
  return set !== undefined && (kid === undefined || set.keys.some((key) => key.kid === kid));
}

/**
 * Keys from a JWKS URL, cached by jose. A token whose `kid` we do not have makes us refetch the
 * set at once (the provider may have rotated its keys); such refetches happen at most once per
 * cooldown, and requests that arrive during one join it. After a failed fetch, requests within
 * the cooldown do not try again: a known key keeps working from the cache, an unknown one gets
 * 503 (we cannot tell whether the token is good).
 */
function remoteKeys(url: string): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(new URL(url), {
    cooldownDuration: UNKNOWN_KID_COOLDOWN_MS,
    cacheMaxAge: JWKS_CACHE_MS,
    timeoutDuration: JWKS_TIMEOUT_MS,
  });
  let lastUnknownKidFetch = -Infinity;
  let lastFailure = -Infinity;

  async function refetch(unknownKid: boolean): Promise<void> {
    if (!remote.reloading) {
      if (Date.now() - lastFailure < UNKNOWN_KID_COOLDOWN_MS) throw identityProviderDown();
      if (unknownKid) {
        if (Date.now() - lastUnknownKidFetch < UNKNOWN_KID_COOLDOWN_MS) return;
        lastUnknownKidFetch = Date.now();
      }
    }
    try {
      await remote.reload();
    } catch {
      lastFailure = Date.now();
      throw identityProviderDown();
    }
  }

  return async (header, token) => {
    const known = remote.jwks();
    const knownKey = hasKey(known, header.kid);
    if (!knownKey || !remote.fresh) {
      try {
        await refetch(known !== undefined && !knownKey);
      } catch (error) {
        if (!knownKey) throw error;
        return createLocalJWKSet(known!)(header, token); // stale, but the provider is down
      }
    }
    return remote(header, token); // fresh now: jose looks the key up without fetching
  };
}

function scopesOf(payload: JWTPayload): string[] {
  const raw = payload.scope ?? payload.scp;
  if (typeof raw === 'string') return raw.split(' ').filter(Boolean);
  if (Array.isArray(raw)) return raw.filter((s): s is string => typeof s === 'string');
  return [];
}

function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'token expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    return `claim ${error.claim} is ${error.reason === 'missing' ? 'missing' : 'not valid'}`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'signing algorithm not allowed';
  if (error instanceof errors.JWKSNoMatchingKey) return 'unknown signing key';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'bad signature';
  return 'malformed or unverifiable JWT';
}

/** A verifier for JWTs when a JWKS URL or public key is configured; undefined otherwise. */
export function jwtVerifier(config: Config): Verifier | undefined {
  const key: JWTVerifyGetKey | KeyObject | undefined = config.jwtJwksUrl
    ? remoteKeys(config.jwtJwksUrl)
    : config.jwtPublicKey;
  if (key === undefined) return undefined;
  // checkConfig refuses this already; an app built without it must not skip the audience check.
  if (config.jwtAudience === undefined) throw new ConfigError('JWTs are on but no audience is set');
  const claim = config.jwtAccountClaim;
  const options = {
    algorithms: JWT_ALGORITHMS,
    audience: config.jwtAudience,
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    ...(config.jwtIssuer !== undefined ? { issuer: config.jwtIssuer } : {}),
  };

  return async (token) => {
    let payload: JWTPayload;
    try {
      ({ payload } =
        typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options));
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw invalidToken(describe(error));
    }
    const account = payload[claim];
    if (typeof account !== 'string' || account === '') throw invalidToken(`the ${claim} claim names no account`);
    const caller: Caller = { account, scopes: new Set(scopesOf(payload)) };
    if (typeof payload.exp === 'number') caller.expiresAt = (payload.exp + CLOCK_TOLERANCE_SECONDS) * 1000;
    return caller;
  };
}
