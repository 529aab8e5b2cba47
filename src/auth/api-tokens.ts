import { hash, randomBytes } from 'node:crypto';
import type { Storage } from '../storage/types.js';
import type { NewToken, TokenRecord } from '../storage/types/tokens.js';
import { SCOPES, type Scope } from './scopes.js';

/** API tokens: a random secret shown once; the store keeps only its SHA-256. */

export const TOKEN_PREFIX = 'pst_';

/**
 * SHA-256 and not a slow password hash: the secret is 256 random bits, so there is nothing to
 * brute-force, and a fast hash lets every request look its token up by hash.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'base64url');
}

export interface IssuedToken {
  record: TokenRecord;
  secret: string;
}

export function newToken(
  account: string,
  scopes: readonly Scope[],
  expiresAt: Date | null,
): { token: NewToken; secret: string } {
  const secret = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const token: NewToken = {
    id: 'tok_' + randomBytes(9).toString('base64url'),
    account,
    secretHash: hashSecret(secret),
    scopes: [...scopes],
    createdAt: new Date(),
    expiresAt,
  };
  return { token, secret };
}

export async function issueToken(
  storage: Storage,
  account: string,
  scopes: readonly Scope[] = SCOPES,
  expiresAt: Date | null = null,
): Promise<IssuedToken> {
  const { token, secret } = newToken(account, scopes, expiresAt);
  await storage.createToken(token);
  return { record: { ...token, revokedAt: null }, secret };
}

/** On a store that has never held a token: one for account `default`, so a newcomer can start at once. */
export async function issueFirstToken(storage: Storage): Promise<string | null> {
  const { token, secret } = newToken('default', SCOPES, null);
  return (await storage.createFirstToken(token)) ? secret : null;
}
