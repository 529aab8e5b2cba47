import type { RowValues } from './row-values.js';
import type { TokenRecord } from './types/tokens.js';

/** The `api_tokens` row as both engines read it (never the secret's hash: it is matched in SQL, not read back). */
export interface TokenRow<Time, Words> {
  id: string;
  account: string;
  scopes: Words;
  created_at: Time;
  expires_at: Time | null;
  revoked_at: Time | null;
}

export const TOKEN_COLUMNS = ['id', 'account', 'scopes', 'created_at', 'expires_at', 'revoked_at'] as const;

export function toToken<Time, Words>(row: TokenRow<Time, Words>, values: RowValues<Time, Words, unknown>): TokenRecord {
  return {
    id: row.id,
    account: row.account,
    scopes: values.words(row.scopes),
    createdAt: values.date(row.created_at),
    expiresAt: row.expires_at === null ? null : values.date(row.expires_at),
    revokedAt: row.revoked_at === null ? null : values.date(row.revoked_at),
  };
}
