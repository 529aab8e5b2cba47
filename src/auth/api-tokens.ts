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

/**
 * The token made on first start is shown once, on standard error, as a plain banner: never in the
 * JSON log stream on standard output, which is shipped and kept. The log says only that it was made.
 */
export const FIRST_TOKEN_LOGGED =
  'first start: created an API token for account "default"; it is shown once, on standard error';

/** The URL a client on this machine can reach: a wildcard address is reached as localhost. */
export function baseUrl(address: string, port: number): string {
  const host =
    address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address;
  return `http://${host}:${port}`;
}

export function announceFirstToken(secret: string, url: string) {
  process.stderr.write(
    `\nThe store had no API token, so one was created for account "default". It is shown only this once:\n\n` +
      `  ${secret}\n\n` +
      `Try it: curl -H "Authorization: Bearer ${secret}" ${url}/plants\n\n`,
  );
}
