import { createPublicKey } from 'node:crypto';
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
import type { Config } from '../config.js';
import { HttpError } from '../errors.js';
import type { Verifier } from './bearer.js';
import { invalidToken } from './errors.js';

/** Asymmetric algorithms only: never `none`, never HMAC (a public key must not double as a secret). */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
export const CLOCK_TOLERANCE_SECONDS = 30;
/** At most one JWKS refetch per second is caused by tokens with a key id we do not know. */
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
 * Keys from a JWKS URL. jose fetches, caches and refetches on an unknown `kid`; around it: a
 * cooldown counted from the last refetch an unknown `kid` caused (so a key rotation is seen at
 * once), the last good set kept for known keys when a refresh fails, and 503 when the provider
 * cannot be reached for a key we do not have.
 */
function remoteKeys(url: string): JWTVerifyGetKey {
  const remote = createRemoteJWKSet(new URL(url), {
    cooldownDuration: 0,
    cacheMaxAge: JWKS_CACHE_MS,
    timeoutDuration: JWKS_TIMEOUT_MS,
  });
  let lastUnknownKidFetch = -Infinity;
  return async (header, token) => {
    const known = remote.jwks();
    if (known !== undefined && !hasKey(known, header.kid)) {
      if (Date.now() - lastUnknownKidFetch < UNKNOWN_KID_COOLDOWN_MS) throw new errors.JWKSNoMatchingKey();
      lastUnknownKidFetch = Date.now();
    }
    try {
      return await remote(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
      if (known !== undefined && hasKey(known, header.kid)) return createLocalJWKSet(known)(header, token);
      throw identityProviderDown();
    }
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
  if (error instanceof errors.JWTClaimValidationFailed) return `claim ${error.claim} is not valid`;
  if (error instanceof errors.JOSEAlgNotAllowed) return 'signing algorithm not allowed';
  if (error instanceof errors.JWKSNoMatchingKey) return 'unknown signing key';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'bad signature';
  return 'malformed or unverifiable JWT';
}

/** A verifier for JWTs when a JWKS URL or public key is configured; undefined otherwise. */
export function jwtVerifier(config: Config): Verifier | undefined {
  const key: JWTVerifyGetKey | KeyObject | undefined = config.jwtJwksUrl
    ? remoteKeys(config.jwtJwksUrl)
    : config.jwtPublicKey
      ? createPublicKey(config.jwtPublicKey)
      : undefined;
  if (key === undefined) return undefined;
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
      ({ payload } = typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options));
    } catch (error) {
      if (error instanceof HttpError) throw error;
      throw invalidToken(describe(error));
    }
    const account = payload[claim];
    if (typeof account !== 'string' || account === '') throw invalidToken(`the ${claim} claim names no account`);
    return { account, scopes: new Set(scopesOf(payload)) };
  };
}
