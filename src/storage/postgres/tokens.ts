import type { Storage } from '../types.js';
import type { NewToken, TokenRecord } from '../types/tokens.js';
import type { Sql, Tx } from './connection.js';

/** ASCII "plant-ft"; see MIGRATION_LOCK in migrations.ts for why a spelled-out key. */
const FIRST_TOKEN_LOCK = 0x706c616e742d6674n;

/** Never the secret's hash: it is matched in SQL, not read back. */
const TOKEN_COLUMNS = ['id', 'account', 'scopes', 'created_at', 'expires_at', 'revoked_at'];

interface TokenRow {
  id: string;
  account: string;
  scopes: string[];
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
}

/** PostgreSQL hands back Dates and a text array. */
function toToken(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    account: row.account,
    scopes: row.scopes,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
  };
}

type TokenStorage = Pick<
  Storage,
  'createToken' | 'findTokenByHash' | 'listTokens' | 'revokeToken' | 'createFirstToken'
>;

export function postgresTokens(sql: Sql): TokenStorage {
  const insertToken = (tx: Sql | Tx, token: NewToken) =>
    tx`INSERT INTO api_tokens (id, account, secret_hash, scopes, created_at, expires_at)
       VALUES (${token.id}, ${token.account}, ${token.secretHash}, ${tx.array(token.scopes)}::text[],
               ${token.createdAt}, ${token.expiresAt})`;

  return {
    async createToken(token) {
      await insertToken(sql, token);
    },

    async findTokenByHash(secretHash) {
      const [row] = await sql<
        TokenRow[]
      >`SELECT ${sql(TOKEN_COLUMNS)} FROM api_tokens WHERE secret_hash = ${secretHash}`;
      return row ? toToken(row) : null;
    },

    async listTokens(account) {
      const ofAccount = account === undefined ? sql`` : sql`WHERE account = ${account}`;
      const rows = await sql<
        TokenRow[]
      >`SELECT ${sql(TOKEN_COLUMNS)} FROM api_tokens ${ofAccount} ORDER BY created_at, id`;
      return rows.map(toToken);
    },

    async revokeToken(id, at) {
      const result = await sql`UPDATE api_tokens SET revoked_at = coalesce(revoked_at, ${at}) WHERE id = ${id}`;
      return result.count === 1;
    },

    async createFirstToken(token) {
      // Processes starting together queue on the lock, so only the first finds the table empty.
      return sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${FIRST_TOKEN_LOCK})`;
        const [{ held }] = await tx<[{ held: boolean }]>`SELECT exists(SELECT 1 FROM api_tokens) AS held`;
        if (held) return false;
        await insertToken(tx, token);
        return true;
      });
    },
  };
}
