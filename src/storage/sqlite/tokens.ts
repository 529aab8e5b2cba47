import type Database from 'better-sqlite3';
import type { Storage } from '../types.js';
import type { NewToken, TokenRecord } from '../types/tokens.js';

interface TokenRow {
  id: string;
  account: string;
  scopes: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

/** Times are epoch milliseconds and scopes one space-separated string. */
function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    account: row.account,
    scopes: row.scopes.split(' ').filter(Boolean),
    createdAt: new Date(row.created_at),
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
  };
}

type TokenStorage = Pick<
  Storage,
  'createToken' | 'findTokenByHash' | 'listTokens' | 'revokeToken' | 'createFirstToken'
>;

export function sqliteTokens(db: Database.Database): TokenStorage {
  const insertToken = db.prepare(
    'INSERT INTO api_tokens (id, account, secret_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const tokenByHash = db.prepare('SELECT * FROM api_tokens WHERE secret_hash = ?');
  const allTokens = db.prepare('SELECT * FROM api_tokens ORDER BY created_at, id');
  const accountTokens = db.prepare('SELECT * FROM api_tokens WHERE account = ? ORDER BY created_at, id');
  const revoke = db.prepare('UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?');
  const countTokens = db.prepare('SELECT count(*) AS n FROM api_tokens');

  const storeToken = (token: NewToken) =>
    insertToken.run(
      token.id,
      token.account,
      token.secretHash,
      token.scopes.join(' '),
      token.createdAt.getTime(),
      token.expiresAt?.getTime() ?? null,
    );
  const createFirst = db.transaction((token: NewToken) => {
    if ((countTokens.get() as { n: number }).n > 0) return false;
    storeToken(token);
    return true;
  });

  return {
    async createToken(token) {
      storeToken(token);
    },
    async findTokenByHash(secretHash) {
      const row = tokenByHash.get(secretHash) as TokenRow | undefined;
      return row ? toToken(row) : null;
    },
    async listTokens(account) {
      const rows = (account === undefined ? allTokens.all() : accountTokens.all(account)) as TokenRow[];
      return rows.map(toToken);
    },
    async revokeToken(id, at) {
      return revoke.run(at.getTime(), id).changes === 1;
    },
    async createFirstToken(token) {
      return createFirst.immediate(token);
    },
  };
}
