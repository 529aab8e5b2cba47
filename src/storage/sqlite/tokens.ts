import type Database from 'better-sqlite3';
import { SQLITE_VALUES } from '../row-values.js';
import { TOKEN_COLUMNS, toToken as tokenOf, type TokenRow } from '../token-rows.js';
import type { NewToken, TokenStorage } from '../types/tokens.js';

/** Times are epoch milliseconds and scopes one space-separated string. */
const toToken = (row: TokenRow<number, string>) => tokenOf(row, SQLITE_VALUES);
const COLUMNS = TOKEN_COLUMNS.join(', ');

export function sqliteTokens(db: Database.Database) {
  const insertToken = db.prepare(
    'INSERT INTO api_tokens (id, account, secret_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const tokenByHash = db.prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE secret_hash = ?`);
  const allTokens = db.prepare(`SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at, id`);
  const accountTokens = db.prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE account = ? ORDER BY created_at, id`);
  const revoke = db.prepare('UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?');
  const countTokens = db.prepare('SELECT count(*) AS n FROM api_tokens');
  const changes = db.prepare('SELECT n FROM token_changes').pluck();

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
      const row = tokenByHash.get(secretHash) as TokenRow<number, string> | undefined;
      return row ? toToken(row) : null;
    },
    async listTokens(account) {
      const rows = (account === undefined ? allTokens.all() : accountTokens.all(account)) as TokenRow<number, string>[];
      return rows.map(toToken);
    },
    async revokeToken(id, at) {
      return revoke.run(at.getTime(), id).changes === 1;
    },
    async createFirstToken(token) {
      return createFirst.immediate(token);
    },
    async tokensVersion() {
      return String(changes.get());
    },
  } satisfies TokenStorage;
}
